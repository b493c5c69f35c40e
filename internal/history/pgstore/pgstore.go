// Package pgstore is the shared history store: PostgreSQL through a pgx
// connection pool, for several chatpipe replicas that must see the same
// sessions and messages. Its schema is applied by embedded migrations at
// Open, and it behaves like sqlitestore (package historytest is the suite
// both pass).
package pgstore

import (
	"context"
	"fmt"
	"io/fs"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chatpipe/chatpipe/internal/clock"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/migrations"
	"github.com/chatpipe/chatpipe/internal/pgdb"
)

var _ history.Store = (*Store)(nil)

// Options tune Open. The zero value is ready to use.
type Options = pgdb.Options

// Store is the PostgreSQL history store. It is safe for concurrent use,
// also by several processes sharing one database.
type Store struct {
	pool      *pgxpool.Pool
	clock     clock.Clock // stamps rows; see the note on clocks below
	closeOnce sync.Once
}

// Open connects to the database at dsn (a postgres:// URL or key=value
// pairs) and applies the migrations it lacks. Errors name the server by
// host, port and database only: never the DSN, which may hold a password.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgdb.Config(dsn, opts)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	s, err := open(ctx, cfg, opts.Schema, migrationFiles)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", pgdb.OpenFailed(cfg.ConnConfig, err))
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
	if err := migrate(ctx, pool, schema, ms, s.clock.Now); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Ping checks that the server answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("pgstore: ping: %w", err)
	}
	return nil
}

// Close closes the pool, waiting for connections in use to be returned.
// Calling it again does nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// The store stamps rows with a clock.Clock, as the SQLite store does, so
// one replica never stamps two sessions alike.
//
// It is the process's clock, not the server's: now() in PostgreSQL is the
// transaction's start, shared by every row it writes and not in commit
// order, and a value taken here lets every write stay one statement.
// Replicas' clocks may disagree by their NTP skew; that can only reorder
// ListSessions among sessions touched within that skew. Message order
// rests on messages.seq, never on times, and a session's updated_at never
// moves backwards (see StartTurn).
