// Package sqlitestore is the embedded knowledge store: documents and
// chunks in SQLite (pure Go, no cgo; the same file as the history store),
// keyword search by FTS5 bm25 over knowledge.IndexText terms, and exact
// vector search over an in-memory copy of the chunk embeddings.
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

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

var _ knowledge.Store = (*Store)(nil)

// MemoryPath opens a private in-memory database that lives until Close;
// for tests.
const MemoryPath = ":memory:"

// busyTimeoutMS is how long a connection waits for a lock held by another
// connection (the history store's writer, another process) before failing
// with SQLITE_BUSY.
const busyTimeoutMS = 5000

// Store is the SQLite knowledge store. It is safe for concurrent use.
type Store struct {
	// writer has exactly one connection, its transactions IMMEDIATE;
	// reader is a pool of query_only connections (writer itself for an
	// in-memory database). The same arrangement as the history store.
	writer *sql.DB
	reader *sql.DB

	// writeMu orders each write with its update of vectors, so the
	// in-memory copy changes in commit order.
	writeMu sync.Mutex
	vectors vectorIndex

	clock     clock
	closeOnce sync.Once
	closeErr  error
}

// Open opens the knowledge tables of the database at path (a file path or
// MemoryPath), creating the file, its parent directory and the tables if
// needed, and loads the chunk embeddings into memory.
func Open(ctx context.Context, path string) (*Store, error) {
	s, err := open(ctx, path, migrationFiles)
	if err != nil {
		return nil, fmt.Errorf("knowledge sqlitestore: open %s: %w", path, err)
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
	if err := s.reloadVectors(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// prepareFile rejects DSN-looking paths, creates the parent directory and
// creates the database file readable by its owner only.
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

// Close closes the connections. Calling it again returns the first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.reader != s.writer {
			errs = append(errs, s.reader.Close())
		}
		errs = append(errs, s.writer.Close())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// write runs fn in a transaction on the writer, with the write lock held;
// after a commit it runs apply (the in-memory update) before releasing the
// lock. fn returns the new store version.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx, now time.Time) (int64, error), apply func(version int64)) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	version, err := fn(tx, s.clock.now())
	if err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	apply(version)
	return nil
}

// bumpVersion advances the version counter inside tx.
func bumpVersion(ctx context.Context, tx *sql.Tx) (int64, error) {
	var v int64
	err := tx.QueryRowContext(ctx, `UPDATE knowledge_state SET version = version + 1 WHERE id = 1 RETURNING version`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("bump version: %w", err)
	}
	return v, nil
}

// Version returns the counter every add and delete advances.
func (s *Store) Version(ctx context.Context) (int64, error) {
	v, err := readVersion(ctx, s.reader)
	if err != nil {
		return 0, fmt.Errorf("knowledge: version: %w", err)
	}
	return v, nil
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readVersion(ctx context.Context, q queryer) (int64, error) {
	var v int64
	err := q.QueryRowContext(ctx, `SELECT version FROM knowledge_state WHERE id = 1`).Scan(&v)
	return v, err
}

// clock stamps rows. Its times strictly increase, so "newest first" is
// never a tie within one process.
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
