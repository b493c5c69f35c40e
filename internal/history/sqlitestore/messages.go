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

const messageColumns = `id, session_id, parent_id, role, content, thinking, references_json, status, usage_json, error,
	model, record_json, created_at, updated_at`

const insertMessage = `INSERT INTO messages (` + messageColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

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
	user.Model, user.Record = "", nil
	answers := make([]history.Message, len(assistantIDs))
	for i, id := range assistantIDs {
		answers[i] = history.Message{ID: id, SessionID: sessionID, Role: history.RoleAssistant, Status: history.StatusStreaming}
	}

	err := s.write(ctx, func(tx *sql.Tx, now time.Time) error {
		parent, err := s.questionParent(ctx, tx, sessionID, user.ParentID)
		if err != nil {
			return err
		}
		user.ParentID = parent
		for i := range answers {
			answers[i].ParentID = user.ID
		}
		user.CreatedAt, user.UpdatedAt = now, now
		msgs := []*history.Message{&user}
		for i := range answers {
			answers[i].CreatedAt, answers[i].UpdatedAt = now, now
			msgs = append(msgs, &answers[i])
		}
		if err := s.insertMessages(ctx, tx, msgs); err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, `UPDATE sessions SET updated_at = ?, current_leaf = ? WHERE id = ?`,
			sqlitedb.FormatTime(now), answers[0].ID, sessionID)
		return err
	})
	if err != nil {
		return history.Message{}, nil, fmt.Errorf("sqlitestore: start turn in session %q: %w", sessionID, err)
	}
	user.References = nilIfEmpty(user.References)
	return user, answers, nil
}

// questionParent resolves where a new question of the session goes (see
// history.Store.StartTurn): the parent's ID, "" for a root.
func (s *Store) questionParent(ctx context.Context, tx *sql.Tx, sessionID, parentID string) (string, error) {
	var leaf string
	err := s.txQueryRow(ctx, tx, `SELECT current_leaf FROM sessions WHERE id = ?`, sessionID).Scan(&leaf)
	if errors.Is(err, sql.ErrNoRows) {
		return "", history.ErrNotFound
	}
	if err != nil {
		return "", err
	}
	switch parentID {
	case history.Root:
		return "", nil
	case "":
		if leaf == "" {
			return "", nil
		}
		parentID = leaf
	}
	return parentID, s.requireParent(ctx, tx, sessionID, parentID, history.RoleAssistant)
}

// requireParent checks that id is a message of the session with the given
// role, else ErrBadParent.
func (s *Store) requireParent(ctx context.Context, tx *sql.Tx, sessionID, id, role string) error {
	var ok bool
	if err := s.txQueryRow(ctx, tx, `SELECT EXISTS (SELECT 1 FROM messages WHERE id = ? AND session_id = ? AND role = ?)`,
		id, sessionID, role).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("message %q: %w", id, history.ErrBadParent)
	}
	return nil
}

// insertMessages inserts msgs in order inside tx.
func (s *Store) insertMessages(ctx context.Context, tx *sql.Tx, msgs []*history.Message) error {
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
}

// StartAnswer implements history.Store.
func (s *Store) StartAnswer(ctx context.Context, sessionID, parentID, assistantID string) (history.Message, error) {
	if assistantID == "" {
		return history.Message{}, errors.New("sqlitestore: start answer: empty message id")
	}
	m := history.Message{ID: assistantID, SessionID: sessionID, ParentID: parentID, Role: history.RoleAssistant,
		Status: history.StatusStreaming}
	err := s.write(ctx, func(tx *sql.Tx, now time.Time) error {
		res, err := s.exec(ctx, tx, `UPDATE sessions SET updated_at = ?, current_leaf = ? WHERE id = ?`,
			sqlitedb.FormatTime(now), assistantID, sessionID)
		if err != nil {
			return err
		}
		if err := requireRow(res); err != nil {
			return err
		}
		if err := s.requireParent(ctx, tx, sessionID, parentID, history.RoleUser); err != nil {
			return err
		}
		m.CreatedAt, m.UpdatedAt = now, now
		return s.insertMessages(ctx, tx, []*history.Message{&m})
	})
	if err != nil {
		return history.Message{}, fmt.Errorf("sqlitestore: start answer in session %q: %w", sessionID, err)
	}
	return m, nil
}

// Branch implements history.Store. Every message was saved after its
// parent, so seq orders a branch root first.
func (s *Store) Branch(ctx context.Context, sessionID, leafID string) ([]history.Message, error) {
	msgs, err := s.branch(ctx, sessionID, leafID)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: branch of session %q: %w", sessionID, err)
	}
	return msgs, nil
}

func (s *Store) branch(ctx context.Context, sessionID, leafID string) ([]history.Message, error) {
	if leafID == "" {
		sess, err := s.GetSession(ctx, sessionID)
		if err != nil {
			return nil, err
		}
		if sess.CurrentLeaf == "" {
			return []history.Message{}, nil
		}
		leafID = sess.CurrentLeaf
	}
	msgs, err := s.queryMessages(ctx, sessionID, `WITH RECURSIVE branch (id) AS (
			SELECT id FROM messages WHERE id = ?1 AND session_id = ?2
			UNION ALL
			SELECT m.parent_id FROM messages AS m JOIN branch AS b ON m.id = b.id WHERE m.parent_id IS NOT NULL
		)
		SELECT `+messageColumns+` FROM messages WHERE id IN (SELECT id FROM branch) ORDER BY seq`, leafID, sessionID)
	if err == nil && len(msgs) == 0 {
		err = fmt.Errorf("message %q: %w", leafID, history.ErrNotFound)
	}
	return msgs, err
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
	record, err := encodeRecord(f.Record)
	if err != nil {
		return fmt.Errorf("sqlitestore: finish message %q: %w", id, err)
	}
	err = s.write(ctx, func(tx *sql.Tx, now time.Time) error {
		res, err := s.exec(ctx, tx, `UPDATE messages
			SET status = ?, content = ?, thinking = ?, references_json = ?, usage_json = ?, error = ?,
			    model = ?, record_json = ?, updated_at = ?
			WHERE id = ? AND status = 'streaming'`,
			f.Status, f.Content, f.Thinking, refs, usage, f.Error, f.Model, record, sqlitedb.FormatTime(now), id)
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
	record, err := encodeRecord(m.Record)
	if err != nil {
		return nil, err
	}
	return []any{m.ID, m.SessionID, sql.NullString{String: m.ParentID, Valid: m.ParentID != ""}, m.Role, m.Content,
		m.Thinking, refs, m.Status, usage, m.Error, m.Model, record,
		sqlitedb.FormatTime(m.CreatedAt), sqlitedb.FormatTime(m.UpdatedAt)}, nil
}

func scanMessage(sc scanner) (history.Message, error) {
	var (
		m                          history.Message
		parent, refs, usage, recrd sql.NullString
		created, updated           string
	)
	if err := sc.Scan(&m.ID, &m.SessionID, &parent, &m.Role, &m.Content, &m.Thinking, &refs, &m.Status, &usage, &m.Error,
		&m.Model, &recrd, &created, &updated); err != nil {
		return history.Message{}, err
	}
	m.ParentID = parent.String
	if recrd.Valid {
		m.Record = new(history.Record)
		if err := json.Unmarshal([]byte(recrd.String), m.Record); err != nil {
			return history.Message{}, fmt.Errorf("message %q: stored record: %w", m.ID, err)
		}
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

// encodeRecord stores an empty record as NULL, so it reads back as nil.
func encodeRecord(r *history.Record) (sql.NullString, error) {
	if r.Empty() {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("encode record: %w", err)
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

func nilIfEmpty(refs []eventbus.Reference) []eventbus.Reference {
	if len(refs) == 0 {
		return nil
	}
	return refs
}
