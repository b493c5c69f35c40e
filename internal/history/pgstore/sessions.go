package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/pgdb"
)

const sessionColumns = `id, tenant_id, title, mode, title_source, current_leaf, created_at, updated_at`

// CreateSession implements history.Store.
func (s *Store) CreateSession(ctx context.Context, sess history.Session) (history.Session, error) {
	if sess.ID == "" {
		return history.Session{}, errors.New("pgstore: create session: empty id")
	}
	if sess.TenantID == "" {
		sess.TenantID = history.DefaultTenant
	}
	now := s.clock.Now()
	sess.CreatedAt, sess.UpdatedAt = now, now
	if sess.TitleSource != history.TitleUser {
		sess.TitleSource = history.TitleDefault
	}
	sess.CurrentLeaf = ""
	_, err := s.pool.Exec(ctx, `INSERT INTO sessions (`+sessionColumns+`) VALUES ($1, $2, $3, $4, $6, '', $5, $5)`,
		sess.ID, sess.TenantID, cleanText(sess.Title), cleanText(sess.Mode), now, sess.TitleSource)
	if pgdb.IsUniqueViolation(err) {
		err = history.ErrAlreadyExists
	}
	if err != nil {
		return history.Session{}, fmt.Errorf("pgstore: create session %q: %w", sess.ID, err)
	}
	sess.Title, sess.Mode = cleanText(sess.Title), cleanText(sess.Mode)
	return sess, nil
}

// GetSession implements history.Store.
func (s *Store) GetSession(ctx context.Context, id string) (history.Session, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = history.ErrNotFound
	}
	if err != nil {
		return history.Session{}, fmt.Errorf("pgstore: get session %q: %w", id, err)
	}
	return sess, nil
}

// ListSessions implements history.Store.
func (s *Store) ListSessions(ctx context.Context, tenantID string, limit, offset int) ([]history.Session, error) {
	if tenantID == "" {
		tenantID = history.DefaultTenant
	}
	rows, err := s.pool.Query(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE tenant_id = $1
		ORDER BY updated_at DESC, id DESC LIMIT $2 OFFSET $3`, tenantID, limitArg(limit), max(offset, 0))
	if err != nil {
		return nil, fmt.Errorf("pgstore: list sessions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (history.Session, error) { return scanSession(row) })
	if err != nil {
		return nil, fmt.Errorf("pgstore: list sessions: %w", err)
	}
	return out, nil
}

// DeleteSession implements history.Store. Its messages go with it by
// ON DELETE CASCADE.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = history.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("pgstore: delete session %q: %w", id, err)
	}
	return nil
}

// SetCurrentLeaf implements history.Store.
func (s *Store) SetCurrentLeaf(ctx context.Context, sessionID, leafID string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE sessions SET current_leaf = $2 WHERE id = $1
		AND EXISTS (SELECT 1 FROM messages WHERE id = $2 AND session_id = $1)`, sessionID, cleanText(leafID))
	if err == nil && tag.RowsAffected() == 0 {
		err = history.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("pgstore: set current leaf of session %q to %q: %w", sessionID, leafID, err)
	}
	return nil
}

// RenameSession implements history.Store. updated_at never moves
// backwards (see StartTurn).
func (s *Store) RenameSession(ctx context.Context, id, title string) error {
	return s.updateSession(ctx, "rename", id, `UPDATE sessions SET title = $2, title_source = 'user',
		updated_at = greatest($3::timestamptz, updated_at + interval '1 microsecond') WHERE id = $1`, title)
}

// SetSessionMode implements history.Store.
func (s *Store) SetSessionMode(ctx context.Context, id, mode string) error {
	return s.updateSession(ctx, "set mode of", id, `UPDATE sessions SET mode = $2,
		updated_at = greatest($3::timestamptz, updated_at + interval '1 microsecond') WHERE id = $1`, mode)
}

func (s *Store) updateSession(ctx context.Context, what, id, query, value string) error {
	tag, err := s.pool.Exec(ctx, query, id, cleanText(value), s.clock.Now())
	if err == nil && tag.RowsAffected() == 0 {
		err = history.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("pgstore: %s session %q: %w", what, id, err)
	}
	return nil
}

// SetGeneratedTitle implements history.Store. It leaves updated_at
// alone: a title arriving is not activity in the conversation.
func (s *Store) SetGeneratedTitle(ctx context.Context, id, title string) (bool, error) {
	var applied, exists bool
	err := s.pool.QueryRow(ctx, `WITH set AS (
			UPDATE sessions SET title = $2, title_source = 'generated' WHERE id = $1 AND title_source <> 'user' RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM set), EXISTS (SELECT 1 FROM sessions WHERE id = $1)`,
		id, cleanText(title)).Scan(&applied, &exists)
	if err == nil && !exists {
		err = history.ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("pgstore: set generated title of session %q: %w", id, err)
	}
	return applied, nil
}

func scanSession(row pgx.Row) (history.Session, error) {
	var sess history.Session
	if err := row.Scan(&sess.ID, &sess.TenantID, &sess.Title, &sess.Mode, &sess.TitleSource, &sess.CurrentLeaf,
		&sess.CreatedAt, &sess.UpdatedAt); err != nil {
		return history.Session{}, err
	}
	sess.CreatedAt, sess.UpdatedAt = sess.CreatedAt.UTC(), sess.UpdatedAt.UTC()
	return sess, nil
}

// limitArg turns "no limit" (limit <= 0) into NULL, which LIMIT reads as
// ALL.
func limitArg(limit int) *int {
	if limit <= 0 {
		return nil
	}
	return &limit
}
