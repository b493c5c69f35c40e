// Package pgstore is the shared knowledge store: documents and chunks in
// PostgreSQL through a pgx connection pool, for several chatpipe replicas.
// Keyword search is PostgreSQL full-text search over knowledge.IndexText
// terms. Vector search runs on the server through pgvector's HNSW index
// when the server has the pgvector extension (pgvector.go), and otherwise
// exactly, over an in-memory copy of the real[] embeddings that follows
// the store's version (vectors.go). It behaves like sqlitestore (package
// knowledgetest is the suite all of them pass).
package pgstore

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chatpipe/chatpipe/internal/clock"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/vectorindex"
	"github.com/chatpipe/chatpipe/internal/migrations"
	"github.com/chatpipe/chatpipe/internal/pgdb"
)

var (
	_ knowledge.Store            = (*Store)(nil)
	_ knowledge.SnapshotSearcher = (*Store)(nil)
)

// Options tune Open. The zero value is ready to use.
type Options struct {
	// MaxConns caps the pool (config postgres.max_conns); 0 keeps the DSN's
	// pool_max_conns or pgx's default.
	MaxConns int32
	// Schema, when set, holds the tables instead of the DSN's search_path
	// (see pgdb.Options).
	Schema string
	// NoPgvector keeps vector search on the in-memory real[] path even
	// where the server has pgvector (config postgres.pgvector: off; tests
	// run both paths against one server).
	NoPgvector bool
	// EfSearch is pgvector's hnsw.ef_search, the candidate list one HNSW
	// search keeps (config postgres.hnsw_ef_search): higher finds more of
	// the true nearest chunks and costs more. 0 means DefaultEfSearch.
	EfSearch int
}

// Store is the PostgreSQL knowledge store. It is safe for concurrent use,
// also by several processes sharing one database.
type Store struct {
	pool *pgxpool.Pool

	// pgvector: vector search runs on the server (pgvector.go), in ext's
	// schema, and vectors stays empty.
	pgvector bool
	ext      extension
	// dims are the embedding dimensions known to be recorded in
	// knowledge_embedding_dims (and indexed, with pgvector); dimsMu guards
	// it.
	dimsMu sync.Mutex
	dims   map[int]bool
	// writeMu orders this process's writes with their updates of vectors,
	// so the in-memory copy changes in commit order.
	writeMu sync.Mutex
	vectors vectorindex.Index

	// clock stamps documents. It is the process's clock, as in the history
	// store (see its clock for why); replicas' clocks may disagree by their
	// NTP skew, which can only reorder documents added within that skew.
	clock     clock.Clock
	closeOnce sync.Once
}

// Open connects to the database at dsn (a postgres:// URL or key=value
// pairs), applies the migrations it lacks and loads the chunk embeddings
// into memory. Errors name the server by host, port and database only:
// never the DSN, which may hold a password.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgdb.Config(dsn, pgdb.Options{MaxConns: opts.MaxConns, Schema: opts.Schema})
	if err != nil {
		return nil, fmt.Errorf("knowledge pgstore: open: %w", err)
	}
	setHNSWParams(cfg.ConnConfig.RuntimeParams, opts.EfSearch)
	s, err := open(ctx, cfg, opts, migrationFiles)
	if err != nil {
		return nil, fmt.Errorf("knowledge pgstore: %w", pgdb.OpenFailed(cfg.ConnConfig, err))
	}
	return s, nil
}

func open(ctx context.Context, cfg *pgxpool.Config, opts Options, migrationFS fs.FS) (*Store, error) {
	ms, err := migrations.Load(migrationFS)
	if err != nil {
		return nil, err
	}
	pool, err := pgdb.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool}
	if s.ext, s.dims, err = migrate(ctx, pool, opts, ms, s.clock.Now); err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := reindexTerms(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("rebuild the keyword index: %w", err)
	}
	s.pgvector = s.ext.schema != ""
	if !s.pgvector {
		if err := s.reloadVectors(ctx); err != nil {
			pool.Close()
			return nil, err
		}
	}
	return s, nil
}

// setHNSWParams sets, for every connection of the pool, the pgvector
// settings of an HNSW search: its candidate list (hnsw.ef_search) and
// iterative scans (relaxed order, re-sorted by pgvectorSearch), which go
// on through the graph while a filter (the tenant) leaves fewer than the
// limit. They are startup parameters: placeholders until pgvector's
// library loads, harmless without it, and no round trip per search.
// Settings the DSN makes (options=-c ...) are kept.
func setHNSWParams(params map[string]string, efSearch int) {
	if efSearch <= 0 {
		efSearch = DefaultEfSearch
	}
	defaults := map[string]string{
		"hnsw.ef_search":      strconv.Itoa(min(efSearch, 1000)), // pgvector's maximum
		"hnsw.iterative_scan": "relaxed_order",
	}
	for k, v := range defaults {
		if _, ok := params[k]; !ok {
			params[k] = v
		}
	}
}

// VectorSearchBackend says how VectorSearch works, for the log at start:
// "pgvector HNSW" or "real[] (why not pgvector)".
func (s *Store) VectorSearchBackend() string {
	if s.pgvector {
		return "pgvector HNSW"
	}
	return "real[] (" + s.ext.reason + ")"
}

// Close closes the pool, waiting for connections in use to be returned.
// Calling it again does nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// Version returns the counter every add and delete advances.
func (s *Store) Version(ctx context.Context) (int64, error) {
	v, err := readVersion(ctx, s.pool)
	if err != nil {
		return 0, fmt.Errorf("knowledge: version: %w", err)
	}
	return v, nil
}

// querier is a pool, a connection or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func readVersion(ctx context.Context, q querier) (int64, error) {
	var v int64
	err := q.QueryRow(ctx, `SELECT version FROM knowledge_state WHERE id = 1`).Scan(&v)
	return v, err
}
