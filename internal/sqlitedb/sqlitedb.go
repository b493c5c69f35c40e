// Package sqlitedb opens the SQLite file chatpipe's embedded stores keep
// their tables in (pure Go, no cgo; the history and knowledge stores may
// share one file), and holds the conventions both follow: how times are
// stored and which errors they recognise.
package sqlitedb

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// MemoryPath opens a private in-memory database that lives until Close.
const MemoryPath = ":memory:"

// busyTimeoutMS is how long a connection waits for a lock held by another
// connection (another store's writer, another process) before failing
// with SQLITE_BUSY.
const busyTimeoutMS = 5000

// Open opens the database at path (a file path or MemoryPath), creating
// the file and its parent directory if needed, as two pools, both in WAL
// mode with foreign keys on:
//
//   - writer has exactly one connection: SQLite allows one writer at a
//     time, and queueing writers in database/sql is cheaper and fairer
//     than letting them spin on the file lock. Its transactions begin
//     IMMEDIATE, taking the write lock up front.
//   - reader is a pool of query_only connections that read concurrently
//     with the writer. For an in-memory database it is writer, as every
//     connection would see its own empty database.
//
// Neither connects before its first use. Close them with Close.
func Open(path string) (writer, reader *sql.DB, err error) {
	inMemory := path == MemoryPath
	if err := prepareFile(path, inMemory); err != nil {
		return nil, nil, err
	}
	common := fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", busyTimeoutMS)
	writer, err = sql.Open("sqlite", path+common+"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, nil, err
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0) // an in-memory database dies with its connection
	writer.SetConnMaxIdleTime(0)
	if inMemory {
		return writer, writer, nil
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	reader, err = sql.Open("sqlite", path+common+"&_pragma=query_only(1)")
	if err != nil {
		return nil, nil, errors.Join(err, writer.Close())
	}
	reader.SetMaxOpenConns(readers)
	reader.SetMaxIdleConns(readers)
	return writer, reader, nil
}

// Close closes the pools Open returned, checkpointing the WAL into the
// database file.
func Close(writer, reader *sql.DB) error {
	var errs []error
	if reader != writer {
		errs = append(errs, reader.Close())
	}
	return errors.Join(append(errs, writer.Close())...)
}

// prepareFile rejects DSN-looking paths, creates the parent directory and
// creates the database file readable by its owner only: it holds users'
// conversations and documents. SQLite gives the -wal and -shm files the
// same mode.
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

// timeLayout is fixed width, so stored times sort as text.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// FormatTime is t as the stores keep times: UTC text, fixed width at
// microseconds, so that times sort as text.
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// ParseTime reads a time FormatTime wrote.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t, nil
}

// IsUniqueViolation reports whether err is a primary key or UNIQUE
// constraint failure.
func IsUniqueViolation(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// IgnoreDone drops the error of rolling back a transaction that already
// ended.
func IgnoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
