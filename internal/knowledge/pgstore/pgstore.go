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
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

var _ knowledge.Store = (*Store)(nil)

// defaultConnectTimeout bounds a connection attempt when the DSN sets no
// connect_timeout: a server that drops packets must not hang a start.
const defaultConnectTimeout = 10 * time.Second

// Options tune Open. The zero value is ready to use.
type Options struct {
	// MaxConns caps the pool (config postgres.max_conns); 0 keeps the DSN's
	// pool_max_conns or pgx's default (the larger of 4 and the CPU count).
	MaxConns int32
	// Schema, when set, holds the tables instead of the DSN's search_path:
	// it is created if missing and is the connections' only search_path
	// entry. Tests give every store its own.
	Schema string
}

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
	vectors vectorIndex

	clock     clock
	closeOnce sync.Once
}

// Open connects to the database at dsn (a postgres:// URL or key=value
// pairs), applies the migrations it lacks and loads the chunk embeddings
// into memory. Errors name the server by host, port and database only:
// never the DSN, which may hold a password.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors quote the DSN, redacted only on a best-effort
		// basis: withhold them.
		return nil, errors.New("knowledge pgstore: open: postgres dsn is not a valid connection string (a postgres:// URL or key=value pairs; details withheld as they may contain the password)")
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "chatpipe"
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}

	s, err := open(ctx, cfg, opts.Schema, migrationFiles)
	if err != nil {
		return nil, &openError{target: target(cfg.ConnConfig), password: cfg.ConnConfig.Password, err: err}
	}
	return s, nil
}

func open(ctx context.Context, cfg *pgxpool.Config, schema string, migrations fs.FS) (*Store, error) {
	ms, err := loadMigrations(migrations)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if s.pgvector, err = migrate(ctx, pool, schema, ms, s.clock.now); err != nil {
		pool.Close()
		return nil, err
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

// clock stamps documents. Its times strictly increase within the process,
// so "newest first" is never a tie among one replica's documents. It is
// the process's clock, as in the history store (see its clock for why);
// replicas' clocks may disagree by their NTP skew, which can only reorder
// documents added within that skew.
type clock struct {
	mu   sync.Mutex
	last time.Time
}

func (c *clock) now() time.Time {
	t := time.Now().UTC().Truncate(time.Microsecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !t.After(c.last) {
		t = c.last.Add(time.Microsecond)
	}
	c.last = t
	return t
}

// uniqueViolation returns the name of the constraint err violates, or ""
// when err is no unique violation.
func uniqueViolation(err error) (constraint string, ok bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation
		return pe.ConstraintName, true
	}
	return "", false
}

// openError is a failure of Open after the DSN parsed. Its message names
// the server as host:port/database; the password is scrubbed from the
// cause too, although pgx does not put it there.
type openError struct {
	target   string
	password string
	err      error
}

func (e *openError) Error() string {
	msg := e.err.Error()
	if e.password != "" {
		msg = strings.ReplaceAll(msg, e.password, "xxxxx")
	}
	return "knowledge pgstore: open " + e.target + ": " + msg
}

func (e *openError) Unwrap() error { return e.err }

// target names a server for people: host:port/database, no user or
// password.
func target(c *pgx.ConnConfig) string {
	return net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))) + "/" + c.Database
}
