package sqlitedb

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// MemoryPath opens a private in-memory database that lives until Close.
const MemoryPath = ":memory:"

// busyTimeoutMS is how long a connection waits for a lock held by another
// connection (another process, a backup) before failing with SQLITE_BUSY.
// Another process's write can be long: `chatpipe ingest` writes each
// document in one transaction, a few seconds for a PDF of thousands of
// pages (20,000 passages: about 5 s), and the server's uploads and saved
// answers wait for it rather than fail; 5 s was too short for that.
const busyTimeoutMS = 30000

// DB is an open database: two pools, both in WAL mode with foreign keys
// on.
//
//   - Writer has exactly one connection: SQLite allows one writer at a
//     time, and queueing writers in database/sql is cheaper and fairer
//     than letting them spin on the file lock. Its transactions begin
//     IMMEDIATE, taking the write lock up front.
//   - Reader is a pool of query_only connections that read concurrently
//     with the writer. For an in-memory database it is Writer, as every
//     connection would see its own empty database.
//
// Every store of the process that opens the same file shares one DB (see
// Open). Neither pool connects before its first use.
type DB struct {
	Writer *sql.DB
	Reader *sql.DB
	// PairedReads is a slot to take (send to it, without blocking) before
	// holding a second Reader connection while one is held: it has room
	// for half the readers, so such reads, each holding one connection
	// while waiting for another, can never hold them all. nil (no slot
	// ever free) for an in-memory database, whose one connection is
	// Writer's.
	PairedReads chan struct{}

	file fs.FileInfo // identity of the file; nil in memory
	path string      // as first opened
	refs int         // guarded by registry.mu
}

// registry holds the file databases open in this process. It exists
// because POSIX locks belong to the process, not to a descriptor: closing
// any descriptor of the file drops every lock the process holds on it,
// SQLite's WAL-mode shared lock included. Had a second store opened (and
// closed) the file itself, an outside reader — the sqlite3 shell, a
// backup tool — would then believe it was the last user, checkpoint and
// delete the -wal and -shm files under the running server, and every
// answer saved after that would be lost at the next crash. So the file is
// opened once per process, by SQLite only, and shared.
var registry struct {
	mu   sync.Mutex
	open []*DB
}

// Open opens the database at path (a file path or MemoryPath). A file
// already open in this process (by path, symlink or hard link) is shared:
// Open returns its DB, and the pools close when the last user calls Close.
// A missing file is created readable by its owner only (it holds users'
// conversations and documents; SQLite gives the -wal and -shm files the
// same mode), with its parent directory.
func Open(path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("empty path")
	}
	if path == MemoryPath {
		w, err := openWriter(path)
		if err != nil {
			return nil, err
		}
		return &DB{Writer: w, Reader: w, refs: 1}, nil
	}
	if strings.HasPrefix(path, "file:") || strings.ContainsRune(path, '?') {
		return nil, errors.New("path must be a file path, not a URI or DSN")
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	info, err := os.Stat(path) // a stat opens no descriptor, so it drops no lock
	switch {
	case err == nil:
		for _, db := range registry.open {
			if os.SameFile(db.file, info) {
				db.refs++
				return db, nil
			}
		}
	case errors.Is(err, fs.ErrNotExist):
		if info, err = createFile(path); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	db, err := openPools(path)
	if err != nil {
		return nil, err
	}
	db.file, db.path, db.refs = info, path, 1
	registry.open = append(registry.open, db)
	return db, nil
}

// createFile creates a database file that does not exist yet. No
// connection of this process can hold a lock on a file that did not
// exist, so opening and closing it here is safe (see registry).
func createFile(path string) (fs.FileInfo, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	return info, errors.Join(err, f.Close())
}

func openWriter(path string) (*sql.DB, error) {
	w, err := sql.Open("sqlite", path+commonPragmas()+"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0) // an in-memory database dies with its connection
	w.SetConnMaxIdleTime(0)
	return w, nil
}

func commonPragmas() string {
	return fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", busyTimeoutMS)
}

func openPools(path string) (*DB, error) {
	w, err := openWriter(path)
	if err != nil {
		return nil, err
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	r, err := sql.Open("sqlite", path+commonPragmas()+"&_pragma=query_only(1)")
	if err != nil {
		return nil, errors.Join(err, w.Close())
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	return &DB{Writer: w, Reader: r, PairedReads: make(chan struct{}, readers/2)}, nil
}

// Close releases this user's share of the database; the last user's Close
// closes the pools, checkpointing the WAL into the database file.
// Calling it more often than Open is a no-op.
func (db *DB) Close() error {
	if db.file != nil {
		registry.mu.Lock()
		defer registry.mu.Unlock()
	}
	if db.refs == 0 {
		return nil
	}
	db.refs--
	if db.refs > 0 {
		return nil
	}
	if db.file != nil {
		for i, x := range registry.open {
			if x == db {
				registry.open = append(registry.open[:i], registry.open[i+1:]...)
				break
			}
		}
	}
	var errs []error
	if db.Reader != db.Writer {
		errs = append(errs, db.Reader.Close())
	}
	return errors.Join(append(errs, db.Writer.Close())...)
}
