package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

const messageColumns = `id, session_id, role, content, thinking, references_json, status, usage_json, error, created_at, updated_at`

const insertMessage = `INSERT INTO messages (` + messageColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// StartTurn implements history.Store.
func (s *Store) StartTurn(ctx context.Context, sessionID string, user history.Message, assistantID string) (history.Message, history.Message, error) {
	u, asst, err := s.StartTurnWithAnswers(ctx, sessionID, user, []string{assistantID})
	if err != nil {
		return history.Message{}, history.Message{}, err
	}
	return u, asst[0], nil
}

// StartTurnWithAnswers implements history.AnswersStarter.
func (s *Store) StartTurnWithAnswers(ctx context.Context, sessionID string, user history.Message,
	assistantIDs []string) (history.Message, []history.Message, error) {
	if user.ID == "" || len(assistantIDs) == 0 || slices.Contains(assistantIDs, "") {
		return history.Message{}, nil, errors.New("sqlitestore: start turn: empty message id")
	}
	user.SessionID, user.Role, user.Status = sessionID, history.RoleUser, history.StatusCompleted
	answers := make([]history.Message, len(assistantIDs))
	for i, id := range assistantIDs {
		answers[i] = history.Message{ID: id, SessionID: sessionID, Role: history.RoleAssistant, Status: history.StatusStreaming}
	}

	err := s.write(ctx, func(tx *sql.Tx, now time.Time) error {
		res, err := s.exec(ctx, tx, `UPDATE sessions SET updated_at = ? WHERE id = ?`, sqlitedb.FormatTime(now), sessionID)
		if err != nil {
			return err
		}
		if err := requireRow(res); err != nil {
			return err
		}
		user.CreatedAt, user.UpdatedAt = now, now
		msgs := []*history.Message{&user}
		for i := range answers {
			answers[i].CreatedAt, answers[i].UpdatedAt = now, now
			msgs = append(msgs, &answers[i])
		}
		for _, m := range msgs {
			args, err := messageArgs(m)
			if err != nil {
				return err
			}
			if _, err := s.exec(ctx, tx, insertMessage, args...); err != nil {
				if sqlitedb.IsUniqueViolation(err) {
					return fmt.Errorf("message %q: %w", m.ID, history.ErrAlreadyExists)
				}
				return err
			}
		}
		return nil
	})
	if err != nil {
		return history.Message{}, nil, fmt.Errorf("sqlitestore: start turn in session %q: %w", sessionID, err)
	}
	user.References = nilIfEmpty(user.References)
	return user, answers, nil
}

// FinishMessage implements history.Store. The status guard in the UPDATE
// makes finishing exactly-once without a read-then-write race.
func (s *Store) FinishMessage(ctx context.Context, id string, f history.Final) error {
	switch f.Status {
	case history.StatusCompleted, history.StatusStopped, history.StatusFailed:
	default:
		return fmt.Errorf("sqlitestore: finish message %q: invalid final status %q", id, f.Status)
	}
	refs, err := encodeReferences(f.References)
	if err != nil {
		return fmt.Errorf("sqlitestore: finish message %q: %w", id, err)
	}
	usage, err := encodeUsage(f.Usage)
	if err != nil {
		return fmt.Errorf("sqlitestore: finish message %q: %w", id, err)
	}
	err = s.write(ctx, func(tx *sql.Tx, now time.Time) error {
		res, err := s.exec(ctx, tx, `UPDATE messages
			SET status = ?, content = ?, thinking = ?, references_json = ?, usage_json = ?, error = ?, updated_at = ?
			WHERE id = ? AND status = 'streaming'`,
			f.Status, f.Content, f.Thinking, refs, usage, f.Error, sqlitedb.FormatTime(now), id)
		if err != nil {
			return err
		}
		return s.requireStreaming(ctx, tx, res, id)
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: finish message %q: %w", id, err)
	}
	return nil
}

// SavePartial implements history.Store. The same status guard as
// FinishMessage's keeps it from ever overwriting a final state.
func (s *Store) SavePartial(ctx context.Context, id, content, thinking string) error {
	err := s.write(ctx, func(tx *sql.Tx, now time.Time) error {
		res, err := s.exec(ctx, tx, `UPDATE messages SET content = ?, thinking = ?, updated_at = ?
			WHERE id = ? AND status = 'streaming'`, content, thinking, sqlitedb.FormatTime(now), id)
		if err != nil {
			return err
		}
		return s.requireStreaming(ctx, tx, res, id)
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: save partial message %q: %w", id, err)
	}
	return nil
}

// requireStreaming turns an UPDATE guarded by status = 'streaming' that
// changed no row into ErrAlreadyFinished or ErrNotFound.
func (s *Store) requireStreaming(ctx context.Context, tx *sql.Tx, res sql.Result, id string) error {
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	var exists bool
	if err := s.txQueryRow(ctx, tx, `SELECT EXISTS (SELECT 1 FROM messages WHERE id = ?)`, id).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return history.ErrAlreadyFinished
	}
	return history.ErrNotFound
}

// GetMessage implements history.Store.
func (s *Store) GetMessage(ctx context.Context, id string) (history.Message, error) {
	m, err := scanMessage(s.queryRow(ctx, `SELECT `+messageColumns+` FROM messages WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = history.ErrNotFound
	}
	if err != nil {
		return history.Message{}, fmt.Errorf("sqlitestore: get message %q: %w", id, err)
	}
	return m, nil
}

// ListMessages implements history.Store.
func (s *Store) ListMessages(ctx context.Context, sessionID string) ([]history.Message, error) {
	msgs, err := s.queryMessages(ctx, sessionID, `SELECT `+messageColumns+` FROM messages
		WHERE session_id = ? ORDER BY seq`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: list messages of session %q: %w", sessionID, err)
	}
	return msgs, nil
}

// RecentMessages implements history.Store.
func (s *Store) RecentMessages(ctx context.Context, sessionID, before string, limit int) ([]history.Message, error) {
	msgs, err := s.recentMessages(ctx, sessionID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: recent messages of session %q: %w", sessionID, err)
	}
	return msgs, nil
}

func (s *Store) recentMessages(ctx context.Context, sessionID, before string, limit int) ([]history.Message, error) {
	var beforeSeq sql.NullInt64
	if before != "" {
		err := s.queryRow(ctx, `SELECT seq FROM messages WHERE id = ? AND session_id = ?`,
			before, sessionID).Scan(&beforeSeq)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("message %q: %w", before, history.ErrNotFound)
		}
		if err != nil {
			return nil, err
		}
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	// The inner query picks the newest eligible messages, the outer one
	// puts them oldest first.
	return s.queryMessages(ctx, sessionID, `SELECT `+messageColumns+` FROM (
			SELECT * FROM messages
			WHERE session_id = ?1
			  AND (?2 IS NULL OR seq < ?2)
			  AND NOT (role = 'assistant' AND (status = 'streaming' OR (status = 'failed' AND content = '')))
			ORDER BY seq DESC LIMIT ?3
		) ORDER BY seq`, sessionID, beforeSeq, limit)
}

// queryMessages runs a query for messages of one session; when it finds
// none it tells an empty session from an unknown one.
func (s *Store) queryMessages(ctx context.Context, sessionID, query string, args ...any) ([]history.Message, error) {
	// The rows are closed before the second query: an in-memory store has
	// a single connection.
	out, err := s.collectMessages(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		var exists bool
		if err := s.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?)`,
			sessionID).Scan(&exists); err != nil {
			return nil, err
		}
		if !exists {
			return nil, history.ErrNotFound
		}
	}
	return out, nil
}

func (s *Store) collectMessages(ctx context.Context, query string, args ...any) ([]history.Message, error) {
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []history.Message{}
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// FailAbandoned implements history.Store.
func (s *Store) FailAbandoned(ctx context.Context, reason string, olderThan time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx, now time.Time) error {
		res, err := s.exec(ctx, tx, `UPDATE messages SET status = 'failed', error = ?, updated_at = ?
			WHERE status = 'streaming' AND created_at < ?`, reason, sqlitedb.FormatTime(now), sqlitedb.FormatTime(olderThan))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: fail abandoned messages: %w", err)
	}
	return int(n), nil
}

// messageArgs lists m's columns in messageColumns order.
func messageArgs(m *history.Message) ([]any, error) {
	refs, err := encodeReferences(m.References)
	if err != nil {
		return nil, err
	}
	usage, err := encodeUsage(m.Usage)
	if err != nil {
		return nil, err
	}
	return []any{m.ID, m.SessionID, m.Role, m.Content, m.Thinking, refs, m.Status, usage, m.Error,
		sqlitedb.FormatTime(m.CreatedAt), sqlitedb.FormatTime(m.UpdatedAt)}, nil
}

func scanMessage(sc scanner) (history.Message, error) {
	var (
		m                history.Message
		refs, usage      sql.NullString
		created, updated string
	)
	if err := sc.Scan(&m.ID, &m.SessionID, &m.Role, &m.Content, &m.Thinking, &refs, &m.Status, &usage, &m.Error,
		&created, &updated); err != nil {
		return history.Message{}, err
	}
	if refs.Valid {
		if err := json.Unmarshal([]byte(refs.String), &m.References); err != nil {
			return history.Message{}, fmt.Errorf("message %q: stored references: %w", m.ID, err)
		}
		m.References = nilIfEmpty(m.References)
	}
	if usage.Valid {
		m.Usage = new(eventbus.Usage)
		if err := json.Unmarshal([]byte(usage.String), m.Usage); err != nil {
			return history.Message{}, fmt.Errorf("message %q: stored usage: %w", m.ID, err)
		}
	}
	var err1, err2 error
	m.CreatedAt, err1 = sqlitedb.ParseTime(created)
	m.UpdatedAt, err2 = sqlitedb.ParseTime(updated)
	return m, errors.Join(err1, err2)
}

// encodeReferences stores no references as NULL, so they read back as nil
// whether they were nil or empty.
func encodeReferences(refs []eventbus.Reference) (sql.NullString, error) {
	if len(refs) == 0 {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(refs)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("encode references: %w", err)
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

func encodeUsage(u *eventbus.Usage) (sql.NullString, error) {
	if u == nil {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(u)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("encode usage: %w", err)
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

func nilIfEmpty(refs []eventbus.Reference) []eventbus.Reference {
	if len(refs) == 0 {
		return nil
	}
	return refs
}
