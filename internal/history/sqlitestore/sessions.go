package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

const sessionColumns = `id, tenant_id, title, mode, created_at, updated_at`

// CreateSession implements history.Store.
func (s *Store) CreateSession(ctx context.Context, sess history.Session) (history.Session, error) {
	if sess.ID == "" {
		return history.Session{}, errors.New("sqlitestore: create session: empty id")
	}
	if sess.TenantID == "" {
		sess.TenantID = history.DefaultTenant
	}
	err := s.write(ctx, func(tx *sql.Tx, now time.Time) error {
		sess.CreatedAt, sess.UpdatedAt = now, now
		_, err := s.exec(ctx, tx, `INSERT INTO sessions (`+sessionColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
			sess.ID, sess.TenantID, sess.Title, sess.Mode, sqlitedb.FormatTime(now), sqlitedb.FormatTime(now))
		if sqlitedb.IsUniqueViolation(err) {
			return history.ErrAlreadyExists
		}
		return err
	})
	if err != nil {
		return history.Session{}, fmt.Errorf("sqlitestore: create session %q: %w", sess.ID, err)
	}
	return sess, nil
}

// GetSession implements history.Store.
func (s *Store) GetSession(ctx context.Context, id string) (history.Session, error) {
	sess, err := scanSession(s.queryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = history.ErrNotFound
	}
	if err != nil {
		return history.Session{}, fmt.Errorf("sqlitestore: get session %q: %w", id, err)
	}
	return sess, nil
}

// ListSessions implements history.Store.
func (s *Store) ListSessions(ctx context.Context, tenantID string, limit, offset int) ([]history.Session, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	if tenantID == "" {
		tenantID = history.DefaultTenant
	}
	rows, err := s.query(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE tenant_id = ?
		ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?`, tenantID, limit, max(offset, 0))
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: list sessions: %w", err)
	}
	defer rows.Close()
	out := []history.Session{}
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: list sessions: %w", err)
		}
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: list sessions: %w", err)
	}
	return out, nil
}

// DeleteSession implements history.Store. Its messages go with it by
// ON DELETE CASCADE.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx *sql.Tx, _ time.Time) error {
		res, err := s.exec(ctx, tx, `DELETE FROM sessions WHERE id = ?`, id)
		if err != nil {
			return err
		}
		return requireRow(res)
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: delete session %q: %w", id, err)
	}
	return nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanSession(sc scanner) (history.Session, error) {
	var (
		sess             history.Session
		created, updated string
	)
	if err := sc.Scan(&sess.ID, &sess.TenantID, &sess.Title, &sess.Mode, &created, &updated); err != nil {
		return history.Session{}, err
	}
	var err1, err2 error
	sess.CreatedAt, err1 = sqlitedb.ParseTime(created)
	sess.UpdatedAt, err2 = sqlitedb.ParseTime(updated)
	return sess, errors.Join(err1, err2)
}

// requireRow turns "no row changed" into history.ErrNotFound.
func requireRow(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return history.ErrNotFound
	}
	return nil
}
