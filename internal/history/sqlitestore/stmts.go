package sqlitestore

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps one prepared statement per query text and pool. SQLite
// spends a large part of a short query parsing its SQL: preparing once
// takes that off every request (saving a turn and loading history are on
// the path to an answer's first token).
//
// The writer pool has a single connection, so a statement can never be
// prepared on it while a transaction holds that connection: a miss inside
// a transaction runs unprepared and is prepared after the commit.
type stmtCache struct {
	mu      sync.Mutex
	stmts   map[stmtKey]*sql.Stmt
	pending map[string]bool // writer queries to prepare once the writer is free
}

type stmtKey struct {
	db    *sql.DB
	query string
}

func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	k := stmtKey{db, query}
	c.mu.Lock()
	st, ok := c.stmts[k]
	c.mu.Unlock()
	if ok {
		return st, nil
	}
	// Prepare without holding mu: it may wait for a connection that a
	// transaction holds, and that transaction may need the cache.
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.stmts[k]; ok { // prepared meanwhile by another caller
		_ = st.Close()
		return prev, nil
	}
	if c.stmts == nil {
		c.stmts = map[stmtKey]*sql.Stmt{}
	}
	c.stmts[k] = st
	return st, nil
}

// cached returns the prepared statement of query on db, if there is one,
// and otherwise remembers to prepare it later.
func (c *stmtCache) cached(db *sql.DB, query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[stmtKey{db, query}]; ok {
		return st
	}
	if c.pending == nil {
		c.pending = map[string]bool{}
	}
	c.pending[query] = true
	return nil
}

// preparePending prepares the writer queries that missed inside a
// transaction; call it when no transaction holds the writer.
func (c *stmtCache) preparePending(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	queries := c.pending
	c.pending = nil
	c.mu.Unlock()
	for q := range queries {
		_, _ = c.get(ctx, db, q) // a failure just leaves it unprepared
	}
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for k, st := range c.stmts {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.stmts, k)
	}
	return first
}

// queryRow runs a single-row read on the reader pool.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := s.stmts.get(ctx, s.reader, query)
	if err != nil {
		return s.reader.QueryRowContext(ctx, query, args...) // reports the same error through Scan
	}
	return st.QueryRowContext(ctx, args...)
}

// query runs a read on the reader pool.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.stmts.get(ctx, s.reader, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// exec runs a write inside tx, a transaction on the writer. The
// statement ignores ctx's cancellation: SQLite answers an interrupted
// write by rolling back the whole transaction, which may hold other
// callers' writes (group commit); a cancelled caller is left out before
// its write starts instead.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	ctx = context.WithoutCancel(ctx)
	if st := s.stmts.cached(s.writer, query); st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// txQueryRow runs a single-row read inside tx, ignoring ctx's
// cancellation for the reason exec gives.
func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	ctx = context.WithoutCancel(ctx)
	if st := s.stmts.cached(s.writer, query); st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}
