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
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/chatpipe/chatpipe/internal/history"
)

var _ history.Store = (*Store)(nil)

// MemoryPath opens a private in-memory database that lives until Close;
// for tests and demos.
const MemoryPath = ":memory:"

// busyTimeoutMS is how long a connection waits for a lock held by another
// connection or process before failing with SQLITE_BUSY.
const busyTimeoutMS = 5000

// Store is the SQLite history store. It is safe for concurrent use.
type Store struct {
	// writer has exactly one connection: SQLite allows one writer at a
	// time, and queueing writers in database/sql is cheaper and fairer
	// than letting them spin on the file lock. Its transactions begin
	// IMMEDIATE, taking the write lock up front.
	writer *sql.DB
	// reader is a pool of query_only connections that read concurrently
	// with the writer (WAL). For an in-memory database it is writer, as
	// every connection would see its own empty database.
	reader *sql.DB

	stmts     stmtCache
	clock     clock
	closeOnce sync.Once
	closeErr  error
}

// Open opens the history database at path, creating the file and its
// parent directory if needed, and applies the migrations it lacks. path is
// a file path or MemoryPath.
func Open(ctx context.Context, path string) (*Store, error) {
	s, err := open(ctx, path, migrationFiles)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	return s, nil
}

func open(ctx context.Context, path string, migrations fs.FS) (*Store, error) {
	ms, err := loadMigrations(migrations)
	if err != nil {
		return nil, err
	}
	inMemory := path == MemoryPath
	if err := prepareFile(path, inMemory); err != nil {
		return nil, err
	}

	common := fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", busyTimeoutMS)
	writer, err := sql.Open("sqlite", path+common+"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0) // an in-memory database dies with its connection
	writer.SetConnMaxIdleTime(0)
	s := &Store{writer: writer, reader: writer}

	if err := migrate(ctx, writer, ms, s.clock.now); err != nil {
		return nil, errors.Join(err, writer.Close())
	}
	if !inMemory {
		readers := max(4, runtime.GOMAXPROCS(0))
		reader, err := sql.Open("sqlite", path+common+"&_pragma=query_only(1)")
		if err != nil {
			return nil, errors.Join(err, writer.Close())
		}
		reader.SetMaxOpenConns(readers)
		reader.SetMaxIdleConns(readers)
		s.reader = reader
	}
	if err := s.Ping(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// prepareFile rejects DSN-looking paths, creates the parent directory and
// creates the database file readable by its owner only: it holds users'
// conversations. SQLite gives the -wal and -shm files the same mode.
func prepareFile(path string, inMemory bool) error {
	if path == "" {
		return errors.New("empty path")
	}
	if inMemory {
		return nil
	}
	if strings.HasPrefix(path, "file:") || strings.ContainsRune(path, '?') {
		return errors.New("path must be a file path, not a URI or DSN")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
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
		errs := []error{s.stmts.close()}
		if s.reader != s.writer {
			errs = append(errs, s.reader.Close())
		}
		errs = append(errs, s.writer.Close())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// write runs fn in a transaction on the writer. now is taken once the
// write lock is held, so times increase in commit order.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx, now time.Time) error) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer s.stmts.preparePending(context.WithoutCancel(ctx), s.writer)
	if err := fn(tx, s.clock.now()); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	return tx.Commit()
}

// clock stamps rows. Its times strictly increase, so "most recently
// updated" is never a tie within one process.
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

// timeLayout is fixed width, so stored times sort as text.
const timeLayout = "2006-01-02T15:04:05.000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t, nil
}

// isUniqueViolation reports whether err is a primary key or UNIQUE
// constraint failure.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}
