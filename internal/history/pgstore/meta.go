package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/pgdb"
)

const feedbackColumns = `message_id, session_id, tenant_id, rating, comment, reason, mode, model, created_at, updated_at`

// setFeedback upserts in one statement: the message (and that it is an
// answer) is checked by the SELECT it inserts from, and the old rating
// comes back from the row the upsert replaced.
const setFeedback = `WITH msg AS (
		SELECT m.id, m.role, m.session_id, s.tenant_id, s.mode
		FROM messages m JOIN sessions s ON s.id = m.session_id WHERE m.id = $1
	), old AS (
		SELECT rating FROM feedback WHERE message_id = $1
	), saved AS (
		INSERT INTO feedback (` + feedbackColumns + `)
		SELECT msg.id, msg.session_id, msg.tenant_id, $2::text, $3::text, $4::text, msg.mode, $5::text, $6::timestamptz, $6::timestamptz FROM msg WHERE msg.role = 'assistant'
		ON CONFLICT (message_id) DO UPDATE SET rating = excluded.rating, comment = excluded.comment,
			reason = excluded.reason, model = excluded.model,
			updated_at = greatest(excluded.updated_at, feedback.updated_at)
		RETURNING ` + feedbackColumns + `
	)
	SELECT (SELECT role FROM msg), coalesce((SELECT rating FROM old), ''), saved.*
	FROM (SELECT 1) AS one LEFT JOIN saved ON true`

// SetFeedback implements history.FeedbackStore.
func (s *Store) SetFeedback(ctx context.Context, f history.Feedback) (history.Feedback, string, error) {
	var (
		role, previous                                         *string
		id, session, tenant, rating, comment, reason, mode, mo *string
		created, updated                                       *time.Time
	)
	err := s.pool.QueryRow(ctx, setFeedback, f.MessageID, f.Rating, cleanText(f.Comment), cleanText(f.Reason),
		cleanText(f.Model), s.clock.Now()).Scan(&role, &previous, &id, &session, &tenant, &rating, &comment, &reason,
		&mode, &mo, &created, &updated)
	switch {
	case err != nil:
	case role == nil:
		err = history.ErrNotFound
	case *role != history.RoleAssistant:
		err = history.ErrNotAssistant
	case id == nil:
		err = errors.New("feedback not saved")
	}
	if err != nil {
		return history.Feedback{}, "", fmt.Errorf("pgstore: set feedback on %q: %w", f.MessageID, err)
	}
	return history.Feedback{MessageID: *id, SessionID: *session, TenantID: *tenant, Rating: *rating, Comment: *comment,
		Reason: *reason, Mode: *mode, Model: *mo, CreatedAt: created.UTC(), UpdatedAt: updated.UTC()}, *previous, nil
}

// DeleteFeedback implements history.FeedbackStore.
func (s *Store) DeleteFeedback(ctx context.Context, messageID string) (history.Feedback, bool, error) {
	f, err := scanFeedback(s.pool.QueryRow(ctx, `DELETE FROM feedback WHERE message_id = $1 RETURNING `+feedbackColumns, messageID))
	if errors.Is(err, pgx.ErrNoRows) {
		return history.Feedback{}, false, nil
	}
	if err != nil {
		return history.Feedback{}, false, fmt.Errorf("pgstore: delete feedback on %q: %w", messageID, err)
	}
	return f, true, nil
}

// FeedbackFor implements history.FeedbackStore.
func (s *Store) FeedbackFor(ctx context.Context, messageIDs []string) (map[string]history.Feedback, error) {
	out := make(map[string]history.Feedback, len(messageIDs))
	if len(messageIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+feedbackColumns+` FROM feedback WHERE message_id = ANY($1)`, messageIDs)
	if err != nil {
		return nil, fmt.Errorf("pgstore: read feedback: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (history.Feedback, error) { return scanFeedback(row) })
	if err != nil {
		return nil, fmt.Errorf("pgstore: read feedback: %w", err)
	}
	for _, f := range list {
		out[f.MessageID] = f
	}
	return out, nil
}

// ListFeedback implements history.FeedbackStore.
func (s *Store) ListFeedback(ctx context.Context, tenantID string, since time.Time, limit int) ([]history.Feedback, error) {
	if tenantID == "" {
		tenantID = history.DefaultTenant
	}
	rows, err := s.pool.Query(ctx, `SELECT `+feedbackColumns+` FROM feedback WHERE tenant_id = $1 AND updated_at >= $2
		ORDER BY updated_at, message_id LIMIT $3`, tenantID, since, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("pgstore: list feedback: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (history.Feedback, error) { return scanFeedback(row) })
	if err != nil {
		return nil, fmt.Errorf("pgstore: list feedback: %w", err)
	}
	if out == nil {
		out = []history.Feedback{}
	}
	return out, nil
}

func scanFeedback(row pgx.Row) (history.Feedback, error) {
	var f history.Feedback
	err := row.Scan(&f.MessageID, &f.SessionID, &f.TenantID, &f.Rating, &f.Comment, &f.Reason, &f.Mode, &f.Model,
		&f.CreatedAt, &f.UpdatedAt)
	f.CreatedAt, f.UpdatedAt = f.CreatedAt.UTC(), f.UpdatedAt.UTC()
	return f, err
}

const summaryColumns = `id, session_id, from_message_id, to_message_id, messages, content, model, created_at`

// SaveSummary implements history.SummaryStore.
func (s *Store) SaveSummary(ctx context.Context, sum history.Summary) (history.Summary, error) {
	if sum.ID == "" {
		return history.Summary{}, errors.New("pgstore: save summary: empty id")
	}
	sum.Content, sum.Model = cleanText(sum.Content), cleanText(sum.Model)
	now := s.clock.Now()
	// Inserted only when both ends of the range are messages of the session.
	tag, err := s.pool.Exec(ctx, `INSERT INTO summaries (`+summaryColumns+`)
		SELECT $1::text, $2::text, $3::text, $4::text, $5::integer, $6::text, $7::text, $8::timestamptz
		WHERE (SELECT count(*) FROM messages WHERE session_id = $2 AND id IN ($3, $4)) = $9::bigint`,
		sum.ID, sum.SessionID, sum.FromMessageID, sum.ToMessageID, sum.Messages, sum.Content, sum.Model, now,
		sum.RangeEnds())
	switch {
	case pgdb.IsUniqueViolation(err):
		err = history.ErrAlreadyExists
	case err == nil && tag.RowsAffected() == 0:
		err = history.ErrNotFound
	}
	if err != nil {
		return history.Summary{}, fmt.Errorf("pgstore: save summary of session %q: %w", sum.SessionID, err)
	}
	sum.CreatedAt = now
	return sum, nil
}

// Summaries implements history.SummaryStore.
func (s *Store) Summaries(ctx context.Context, sessionID string, limit int) ([]history.Summary, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+summaryColumns+` FROM summaries WHERE session_id = $1
		ORDER BY seq DESC LIMIT $2`, sessionID, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("pgstore: summaries of session %q: %w", sessionID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (history.Summary, error) {
		var sum history.Summary
		err := row.Scan(&sum.ID, &sum.SessionID, &sum.FromMessageID, &sum.ToMessageID, &sum.Messages, &sum.Content,
			&sum.Model, &sum.CreatedAt)
		sum.CreatedAt = sum.CreatedAt.UTC()
		return sum, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: summaries of session %q: %w", sessionID, err)
	}
	if out == nil {
		out = []history.Summary{}
	}
	return out, nil
}
