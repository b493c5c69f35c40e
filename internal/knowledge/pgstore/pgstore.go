// Package pgstore is the shared knowledge store: documents and chunks in
// PostgreSQL through a pgx connection pool, for several chatpipe replicas.
// Keyword search is PostgreSQL full-text search over knowledge.IndexText
// terms; vector search is exact, over an in-memory copy of the embeddings
// that follows the store's version (pgvector.go: on the server instead,
// when it has the pgvector extension). It behaves like sqlitestore
// (package knowledgetest is the suite both pass).
package pgstore

import (
	"context"
	"fmt"
	"io/fs"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chatpipe/chatpipe/internal/clock"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/vectorindex"
	"github.com/chatpipe/chatpipe/internal/migrations"
	"github.com/chatpipe/chatpipe/internal/pgdb"
)

var _ knowledge.Store = (*Store)(nil)

// Options tune Open. The zero value is ready to use.
type Options = pgdb.Options

// Store is the PostgreSQL knowledge store. It is safe for concurrent use,
// also by several processes sharing one database.
type Store struct {
	pool *pgxpool.Pool

	// pgvector: vector search runs on the server (pgvector.go) and vectors
	// stays empty.
	pgvector bool
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
	cfg, err := pgdb.Config(dsn, opts)
	if err != nil {
		return nil, fmt.Errorf("knowledge pgstore: open: %w", err)
	}
	s, err := open(ctx, cfg, opts.Schema, migrationFiles)
	if err != nil {
		return nil, fmt.Errorf("knowledge pgstore: %w", pgdb.OpenFailed(cfg.ConnConfig, err))
	}
	return s, nil
}

func open(ctx context.Context, cfg *pgxpool.Config, schema string, migrationFS fs.FS) (*Store, error) {
	ms, err := migrations.Load(migrationFS)
	if err != nil {
		return nil, err
	}
	pool, err := pgdb.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool}
	if s.pgvector, err = migrate(ctx, pool, schema, ms, s.clock.Now); err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := reindexTerms(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("rebuild the keyword index: %w", err)
	}
	if !s.pgvector {
		if err := s.reloadVectors(ctx); err != nil {
			pool.Close()
			return nil, err
		}
	}
	return s, nil
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
