// Package sqlitestore is the embedded history store: one SQLite file
// (pure Go, no cgo) in WAL mode, with one writer connection and a pool of
// read-only connections, its schema applied by embedded migrations.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/chatpipe/chatpipe/internal/clock"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/migrations"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

var _ history.Store = (*Store)(nil)

// MemoryPath opens a private in-memory database that lives until Close;
// for tests and demos.
const MemoryPath = sqlitedb.MemoryPath

// Store is the SQLite history store. It is safe for concurrent use.
type Store struct {
	// writer has exactly one connection, its transactions IMMEDIATE;
	// reader is a pool of query_only connections (writer itself for an
	// in-memory database). See sqlitedb.Open.
	writer *sql.DB
	reader *sql.DB
	db     *sqlitedb.DB // shared with the other store of the same file

	stmts     stmtCache
	group     committer   // group commit of writes (group.go)
	clock     clock.Clock // stamps rows, so "most recently updated" is never a tie within one process
	closeOnce sync.Once
	closeErr  error
}

// Open opens the history database at path, creating the file (readable by
// its owner only: it holds users' conversations) and its parent directory
// if needed, and applies the migrations it lacks. path is a file path or
// MemoryPath.
func Open(ctx context.Context, path string) (*Store, error) {
	s, err := open(ctx, path, migrationFiles)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	return s, nil
}

func open(ctx context.Context, path string, migrationFS fs.FS) (*Store, error) {
	ms, err := migrations.Load(migrationFS)
	if err != nil {
		return nil, err
	}
	db, err := sqlitedb.Open(path)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, writer: db.Writer, reader: db.Reader}
	if err := migrate(ctx, s.writer, ms, s.clock.Now); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	if err := s.Ping(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// Ping checks that both the writer and the readers can reach the file.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.writer.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlitestore: ping: %w", err)
	}
	if err := s.reader.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlitestore: ping readers: %w", err)
	}
	return nil
}

// Close closes the connections, checkpointing the WAL into the database
// file. Calling it again returns the first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.stmts.close(), s.db.Close())
	})
	return s.closeErr
}
