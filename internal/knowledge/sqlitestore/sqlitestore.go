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
	"sync"
	"time"

	"github.com/chatpipe/chatpipe/internal/clock"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/vectorindex"
	"github.com/chatpipe/chatpipe/internal/migrations"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

var _ knowledge.Store = (*Store)(nil)

// MemoryPath opens a private in-memory database that lives until Close;
// for tests.
const MemoryPath = sqlitedb.MemoryPath

// Store is the SQLite knowledge store. It is safe for concurrent use.
type Store struct {
	// writer has exactly one connection, its transactions IMMEDIATE;
	// reader is a pool of query_only connections (writer itself for an
	// in-memory database), as for the history store: see sqlitedb.Open.
	writer *sql.DB
	reader *sql.DB
	db     *sqlitedb.DB // shared with the other store of the same file

	// writeMu orders each write with its update of vectors, so the
	// in-memory copy changes in commit order.
	writeMu sync.Mutex
	vectors vectorindex.Index

	clock     clock.Clock
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
	if _, err := reindexTerms(ctx, s.writer); err != nil {
		return nil, errors.Join(fmt.Errorf("rebuild the keyword index: %w", err), db.Close())
	}
	if err := s.checkTenantTerms(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("check the keyword index: %w", err), db.Close())
	}
	if err := s.reloadVectors(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// Close closes the connections. Calling it again returns the first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.db.Close() })
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
	version, err := fn(tx, s.clock.Now())
	if err != nil {
		return errors.Join(err, sqlitedb.IgnoreDone(tx.Rollback()))
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
