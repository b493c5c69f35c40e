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

const sessionColumns = `id, tenant_id, title, mode, title_source, current_leaf, created_at, updated_at`

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
		if sess.TitleSource != history.TitleUser {
			sess.TitleSource = history.TitleDefault
		}
		sess.CurrentLeaf = ""
		_, err := s.exec(ctx, tx, `INSERT INTO sessions (`+sessionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			sess.ID, sess.TenantID, sess.Title, sess.Mode, sess.TitleSource, sess.CurrentLeaf,
			sqlitedb.FormatTime(now), sqlitedb.FormatTime(now))
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

// SetCurrentLeaf implements history.Store.
func (s *Store) SetCurrentLeaf(ctx context.Context, sessionID, leafID string) error {
	err := s.write(ctx, func(tx *sql.Tx, _ time.Time) error {
		res, err := s.exec(ctx, tx, `UPDATE sessions SET current_leaf = ?1 WHERE id = ?2
			AND EXISTS (SELECT 1 FROM messages WHERE id = ?1 AND session_id = ?2)`, leafID, sessionID)
		if err != nil {
			return err
		}
		return requireRow(res)
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: set current leaf of session %q to %q: %w", sessionID, leafID, err)
	}
	return nil
}

// RenameSession implements history.Store.
func (s *Store) RenameSession(ctx context.Context, id, title string) error {
	return s.updateSession(ctx, "rename", id, `UPDATE sessions SET title = ?, title_source = 'user', updated_at = ? WHERE id = ?`, title)
}

// SetSessionMode implements history.Store.
func (s *Store) SetSessionMode(ctx context.Context, id, mode string) error {
	return s.updateSession(ctx, "set mode of", id, `UPDATE sessions SET mode = ?, updated_at = ? WHERE id = ?`, mode)
}

func (s *Store) updateSession(ctx context.Context, what, id, query, value string) error {
	err := s.write(ctx, func(tx *sql.Tx, now time.Time) error {
		res, err := s.exec(ctx, tx, query, value, sqlitedb.FormatTime(now), id)
		if err != nil {
			return err
		}
		return requireRow(res)
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: %s session %q: %w", what, id, err)
	}
	return nil
}

// SetGeneratedTitle implements history.Store. It leaves UpdatedAt alone:
// a title arriving is not activity in the conversation.
func (s *Store) SetGeneratedTitle(ctx context.Context, id, title string) (bool, error) {
	var applied bool
	err := s.write(ctx, func(tx *sql.Tx, _ time.Time) error {
		res, err := s.exec(ctx, tx, `UPDATE sessions SET title = ?, title_source = 'generated'
			WHERE id = ? AND title_source <> 'user'`, title, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			applied = n == 1
			return err
		}
		var exists bool
		if err := s.txQueryRow(ctx, tx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?)`, id).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return history.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("sqlitestore: set generated title of session %q: %w", id, err)
	}
	return applied, nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanSession(sc scanner) (history.Session, error) {
	var (
		sess             history.Session
		created, updated string
	)
	if err := sc.Scan(&sess.ID, &sess.TenantID, &sess.Title, &sess.Mode, &sess.TitleSource, &sess.CurrentLeaf,
		&created, &updated); err != nil {
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
