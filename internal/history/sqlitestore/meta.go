package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

const feedbackColumns = `message_id, session_id, tenant_id, rating, comment, reason, mode, model, created_at, updated_at`

// SetFeedback implements history.FeedbackStore.
func (s *Store) SetFeedback(ctx context.Context, f history.Feedback) (history.Feedback, string, error) {
	var previous string
	err := s.write(ctx, func(tx *sql.Tx, now time.Time) error {
		var role string
		err := s.txQueryRow(ctx, tx, `SELECT m.role, m.session_id, s.tenant_id, s.mode
			FROM messages m JOIN sessions s ON s.id = m.session_id WHERE m.id = ?`, f.MessageID).
			Scan(&role, &f.SessionID, &f.TenantID, &f.Mode)
		if errors.Is(err, sql.ErrNoRows) {
			return history.ErrNotFound
		}
		if err != nil {
			return err
		}
		if role != history.RoleAssistant {
			return history.ErrNotAssistant
		}
		var created sql.NullString
		if err := s.txQueryRow(ctx, tx, `SELECT rating, created_at FROM feedback WHERE message_id = ?`, f.MessageID).
			Scan(&previous, &created); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		f.CreatedAt, f.UpdatedAt = now, now
		if created.Valid {
			if f.CreatedAt, err = sqlitedb.ParseTime(created.String); err != nil {
				return err
			}
		}
		_, err = s.exec(ctx, tx, `INSERT INTO feedback (`+feedbackColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (message_id) DO UPDATE SET rating = excluded.rating, comment = excluded.comment,
				reason = excluded.reason, model = excluded.model, updated_at = excluded.updated_at`,
			f.MessageID, f.SessionID, f.TenantID, f.Rating, f.Comment, f.Reason, f.Mode, f.Model,
			sqlitedb.FormatTime(f.CreatedAt), sqlitedb.FormatTime(now))
		return err
	})
	if err != nil {
		return history.Feedback{}, "", fmt.Errorf("sqlitestore: set feedback on %q: %w", f.MessageID, err)
	}
	return f, previous, nil
}

// DeleteFeedback implements history.FeedbackStore.
func (s *Store) DeleteFeedback(ctx context.Context, messageID string) (history.Feedback, bool, error) {
	var (
		f     history.Feedback
		found bool
	)
	err := s.write(ctx, func(tx *sql.Tx, _ time.Time) error {
		var err error
		f, err = scanFeedback(s.txQueryRow(ctx, tx, `SELECT `+feedbackColumns+` FROM feedback WHERE message_id = ?`, messageID))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		_, err = s.exec(ctx, tx, `DELETE FROM feedback WHERE message_id = ?`, messageID)
		return err
	})
	if err != nil {
		return history.Feedback{}, false, fmt.Errorf("sqlitestore: delete feedback on %q: %w", messageID, err)
	}
	return f, found, nil
}

// FeedbackFor implements history.FeedbackStore.
func (s *Store) FeedbackFor(ctx context.Context, messageIDs []string) (map[string]history.Feedback, error) {
	out := make(map[string]history.Feedback, len(messageIDs))
	// SQLite binds at most 32766 parameters; a page of messages is far below.
	for len(messageIDs) > 0 {
		batch := messageIDs[:min(len(messageIDs), 500)]
		messageIDs = messageIDs[len(batch):]
		args := make([]any, len(batch))
		for i, id := range batch {
			args[i] = id
		}
		rows, err := s.reader.QueryContext(ctx, `SELECT `+feedbackColumns+` FROM feedback WHERE message_id IN (?`+
			strings.Repeat(", ?", len(batch)-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: read feedback: %w", err)
		}
		err = collectFeedback(rows, func(f history.Feedback) { out[f.MessageID] = f })
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: read feedback: %w", err)
		}
	}
	return out, nil
}

// ListFeedback implements history.FeedbackStore.
func (s *Store) ListFeedback(ctx context.Context, tenantID string, since time.Time, limit int) ([]history.Feedback, error) {
	if limit <= 0 {
		limit = -1
	}
	if tenantID == "" {
		tenantID = history.DefaultTenant
	}
	rows, err := s.query(ctx, `SELECT `+feedbackColumns+` FROM feedback WHERE tenant_id = ? AND updated_at >= ?
		ORDER BY updated_at, message_id LIMIT ?`, tenantID, sqlitedb.FormatTime(since), limit)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: list feedback: %w", err)
	}
	out := []history.Feedback{}
	if err := collectFeedback(rows, func(f history.Feedback) { out = append(out, f) }); err != nil {
		return nil, fmt.Errorf("sqlitestore: list feedback: %w", err)
	}
	return out, nil
}

func collectFeedback(rows *sql.Rows, add func(history.Feedback)) error {
	defer rows.Close()
	for rows.Next() {
		f, err := scanFeedback(rows)
		if err != nil {
			return err
		}
		add(f)
	}
	return rows.Err()
}

func scanFeedback(sc scanner) (history.Feedback, error) {
	var (
		f                history.Feedback
		created, updated string
	)
	if err := sc.Scan(&f.MessageID, &f.SessionID, &f.TenantID, &f.Rating, &f.Comment, &f.Reason, &f.Mode, &f.Model,
		&created, &updated); err != nil {
		return history.Feedback{}, err
	}
	var err1, err2 error
	f.CreatedAt, err1 = sqlitedb.ParseTime(created)
	f.UpdatedAt, err2 = sqlitedb.ParseTime(updated)
	return f, errors.Join(err1, err2)
}

const summaryColumns = `id, session_id, from_message_id, to_message_id, messages, content, model, created_at`

// SaveSummary implements history.SummaryStore.
func (s *Store) SaveSummary(ctx context.Context, sum history.Summary) (history.Summary, error) {
	if sum.ID == "" {
		return history.Summary{}, errors.New("sqlitestore: save summary: empty id")
	}
	err := s.write(ctx, func(tx *sql.Tx, now time.Time) error {
		var n int
		if err := s.txQueryRow(ctx, tx, `SELECT count(*) FROM messages WHERE session_id = ? AND id IN (?, ?)`,
			sum.SessionID, sum.FromMessageID, sum.ToMessageID).Scan(&n); err != nil {
			return err
		}
		if n != sum.RangeEnds() {
			return history.ErrNotFound // a range end is not a message of this session
		}
		sum.CreatedAt = now
		_, err := s.exec(ctx, tx, `INSERT INTO summaries (`+summaryColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			sum.ID, sum.SessionID, sum.FromMessageID, sum.ToMessageID, sum.Messages, sum.Content, sum.Model,
			sqlitedb.FormatTime(now))
		if sqlitedb.IsUniqueViolation(err) {
			return history.ErrAlreadyExists
		}
		return err
	})
	if err != nil {
		return history.Summary{}, fmt.Errorf("sqlitestore: save summary of session %q: %w", sum.SessionID, err)
	}
	return sum, nil
}

// Summaries implements history.SummaryStore.
func (s *Store) Summaries(ctx context.Context, sessionID string, limit int) ([]history.Summary, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.query(ctx, `SELECT `+summaryColumns+` FROM summaries WHERE session_id = ?
		ORDER BY seq DESC LIMIT ?`, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: summaries of session %q: %w", sessionID, err)
	}
	defer rows.Close()
	out := []history.Summary{}
	for rows.Next() {
		var (
			sum     history.Summary
			created string
		)
		if err := rows.Scan(&sum.ID, &sum.SessionID, &sum.FromMessageID, &sum.ToMessageID, &sum.Messages,
			&sum.Content, &sum.Model, &created); err != nil {
			return nil, fmt.Errorf("sqlitestore: summaries of session %q: %w", sessionID, err)
		}
		if sum.CreatedAt, err = sqlitedb.ParseTime(created); err != nil {
			return nil, err
		}
		out = append(out, sum)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: summaries of session %q: %w", sessionID, err)
	}
	return out, nil
}
