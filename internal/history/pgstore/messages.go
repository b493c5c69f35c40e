package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/pgdb"
)

const messageColumns = `id, session_id, parent_id, role, content, thinking, references_json, status, usage_json, error,
	model, record_json, created_at, updated_at`

// startTurn is StartTurn in one statement, so one round trip and atomic
// without an explicit transaction. FOR UPDATE takes the session's row
// lock, so concurrent turns of one session queue there, each reads the
// current leaf the one before it left, and they draw their seq in commit
// order; no session row (or a parent that is not an answer of the
// session), no messages. A session's updated_at never moves backwards,
// even when another replica with a clock ahead of ours touched it last.
// ORDER BY makes the user's message draw the lower seq. $9 true: the
// question follows the current leaf; else it follows $10 (NULL = root),
// which must be an answer of the session. The current leaf is not checked
// (it is one by construction, and a leaf another turn just committed is
// not in this statement's snapshot, only in the locked row).
const startTurn = `WITH sess AS (
		SELECT id, current_leaf FROM sessions WHERE id = $1 FOR UPDATE
	), parent AS (
		SELECT CASE WHEN $9::bool THEN NULLIF(sess.current_leaf, '') ELSE $10::text END AS id FROM sess
	), valid AS (
		SELECT parent.id FROM parent
		WHERE $9::bool OR parent.id IS NULL
		   OR EXISTS (SELECT 1 FROM messages WHERE id = parent.id AND session_id = $1 AND role = 'assistant')
	), touched AS (
		UPDATE sessions SET updated_at = greatest($3::timestamptz, updated_at + interval '1 microsecond'),
		       current_leaf = $11
		FROM valid
		WHERE sessions.id = $1
		RETURNING sessions.id, valid.id AS parent_id
	)
	INSERT INTO messages (` + messageColumns + `)
	SELECT m.id, touched.id, CASE WHEN m.ord = 1 THEN touched.parent_id ELSE $2 END,
	       m.role, m.content, m.thinking, m.refs, m.status, m.usage, m.error, '', NULL, $3, $3
	FROM touched, (VALUES
		(1, $2::text, 'user', $4::text, $5::text, $6::jsonb, 'completed', $7::jsonb, $8::text),
		(2, $11::text, 'assistant', '', '', NULL, 'streaming', NULL, '')` + answerRows + `
	) AS m (ord, id, role, content, thinking, refs, status, usage, error)
	ORDER BY m.ord
	RETURNING id, parent_id`

// answerRows marks where startTurnWithAnswers adds the rows of further
// assistant messages.
const answerRows = "\n\t\t/* more answers */"

// startTurnWithAnswers is startTurn reserving n assistant messages, whose
// ids are $11, $12, …
func startTurnWithAnswers(n int) string {
	var rows strings.Builder
	for i := 1; i < n; i++ {
		fmt.Fprintf(&rows, ",\n\t\t(%d, $%d::text, 'assistant', '', '', NULL, 'streaming', NULL, '')", i+2, i+11)
	}
	return strings.Replace(startTurn, answerRows, rows.String(), 1)
}

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
		return history.Message{}, nil, errors.New("pgstore: start turn: empty message id")
	}
	user.SessionID, user.Role, user.Status = sessionID, history.RoleUser, history.StatusCompleted
	user.Content, user.Thinking, user.Error = cleanText(user.Content), cleanText(user.Thinking), cleanText(user.Error)
	user.References = cleanReferences(user.References)

	refs, usage, err := encodeJSON(user.References, user.Usage)
	if err != nil {
		return history.Message{}, nil, fmt.Errorf("pgstore: start turn in session %q: %w", sessionID, err)
	}
	now := s.clock.Now()
	user.CreatedAt, user.UpdatedAt = now, now
	user.Model, user.Record = "", nil
	answers := make([]history.Message, len(assistantIDs))
	followLeaf, parent := user.ParentID == "", (*string)(nil)
	if user.ParentID != "" && user.ParentID != history.Root {
		parent = new(cleanText(user.ParentID))
	}
	args := []any{sessionID, user.ID, now, user.Content, user.Thinking, refs, usage, user.Error, followLeaf, parent}
	for i, id := range assistantIDs {
		answers[i] = history.Message{ID: id, SessionID: sessionID, ParentID: user.ID, Role: history.RoleAssistant,
			Status: history.StatusStreaming, CreatedAt: now, UpdatedAt: now}
		args = append(args, id)
	}
	inserted := 0
	user.ParentID = ""
	rows, err := s.pool.Query(ctx, startTurnWithAnswers(len(assistantIDs)), args...)
	if err == nil {
		var id string
		var parentID *string
		_, err = pgx.ForEachRow(rows, []any{&id, &parentID}, func() error {
			inserted++
			if id == user.ID && parentID != nil {
				user.ParentID = *parentID
			}
			return nil
		})
	}
	switch {
	case pgdb.IsUniqueViolation(err):
		err = history.ErrAlreadyExists
	case err == nil && inserted == 0:
		named := "the current leaf"
		if parent != nil {
			named = *parent
		}
		err = s.whyNoTurn(ctx, sessionID, named)
	}
	if err != nil {
		return history.Message{}, nil, fmt.Errorf("pgstore: start turn in session %q: %w", sessionID, err)
	}
	return user, answers, nil
}

// whyNoTurn names why startTurn saved nothing: no such session, or a
// parent that is not an answer of the session.
func (s *Store) whyNoTurn(ctx context.Context, sessionID, parentID string) error {
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)`, sessionID).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return history.ErrNotFound
	}
	return fmt.Errorf("message %q: %w", parentID, history.ErrBadParent)
}

// StartAnswer implements history.Store, in one statement as startTurn.
func (s *Store) StartAnswer(ctx context.Context, sessionID, parentID, assistantID string) (history.Message, error) {
	if assistantID == "" {
		return history.Message{}, errors.New("pgstore: start answer: empty message id")
	}
	now := s.clock.Now()
	m := history.Message{ID: assistantID, SessionID: sessionID, ParentID: parentID, Role: history.RoleAssistant,
		Status: history.StatusStreaming, CreatedAt: now, UpdatedAt: now}
	tag, err := s.pool.Exec(ctx, `WITH touched AS (
			UPDATE sessions SET updated_at = greatest($4::timestamptz, updated_at + interval '1 microsecond'),
			       current_leaf = $3
			WHERE id = $1
			  AND EXISTS (SELECT 1 FROM messages WHERE id = $2 AND session_id = $1 AND role = 'user')
			RETURNING id
		)
		INSERT INTO messages (`+messageColumns+`)
		SELECT $3, touched.id, $2, 'assistant', '', '', NULL, 'streaming', NULL, '', '', NULL, $4, $4 FROM touched`,
		sessionID, cleanText(parentID), assistantID, now)
	switch {
	case pgdb.IsUniqueViolation(err):
		err = history.ErrAlreadyExists
	case err == nil && tag.RowsAffected() == 0:
		err = s.whyNoTurn(ctx, sessionID, parentID)
	}
	if err != nil {
		return history.Message{}, fmt.Errorf("pgstore: start answer in session %q: %w", sessionID, err)
	}
	return m, nil
}

// Branch implements history.Store. Every message was saved after its
// parent, so seq orders a branch root first.
func (s *Store) Branch(ctx context.Context, sessionID, leafID string) ([]history.Message, error) {
	msgs, err := s.queryMessages(ctx, sessionID, `WITH RECURSIVE branch (id) AS (
			SELECT CASE WHEN $2 = '' THEN NULLIF(current_leaf, '') ELSE $2 END FROM sessions WHERE id = $1
			UNION ALL
			SELECT m.parent_id FROM messages AS m JOIN branch AS b ON m.id = b.id
			WHERE m.session_id = $1 AND m.parent_id IS NOT NULL
		)
		SELECT `+messageColumns+` FROM messages
		WHERE session_id = $1 AND id IN (SELECT id FROM branch) ORDER BY seq`, sessionID, cleanText(leafID))
	if err == nil && len(msgs) == 0 && leafID != "" {
		err = fmt.Errorf("message %q: %w", leafID, history.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: branch of session %q: %w", sessionID, err)
	}
	return msgs, nil
}

// FinishMessage implements history.Store. The status guard in the UPDATE
// makes finishing exactly-once, across replicas too: of concurrent
// updates the row lock lets one through, and the others re-check the
// guard on the row it wrote.
func (s *Store) FinishMessage(ctx context.Context, id string, f history.Final) error {
	switch f.Status {
	case history.StatusCompleted, history.StatusStopped, history.StatusFailed:
	default:
		return fmt.Errorf("pgstore: finish message %q: invalid final status %q", id, f.Status)
	}
	refs, usage, err := encodeJSON(cleanReferences(f.References), f.Usage)
	if err != nil {
		return fmt.Errorf("pgstore: finish message %q: %w", id, err)
	}
	record, err := encodeRecord(f.Record)
	if err != nil {
		return fmt.Errorf("pgstore: finish message %q: %w", id, err)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE messages
		SET status = $2, content = $3, thinking = $4, references_json = $5, usage_json = $6, error = $7,
		    model = $9, record_json = $10, updated_at = greatest($8, updated_at)
		WHERE id = $1 AND status = 'streaming'`,
		id, f.Status, cleanText(f.Content), cleanText(f.Thinking), refs, usage, cleanText(f.Error), s.clock.Now(),
		cleanText(f.Model), record)
	if err = s.requireStreaming(ctx, tag, err, id); err != nil {
		return fmt.Errorf("pgstore: finish message %q: %w", id, err)
	}
	return nil
}

// SavePartial implements history.Store. The same status guard as
// FinishMessage's keeps it from ever overwriting a final state.
func (s *Store) SavePartial(ctx context.Context, id, content, thinking string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE messages
		SET content = $2, thinking = $3, updated_at = greatest($4, updated_at)
		WHERE id = $1 AND status = 'streaming'`,
		id, cleanText(content), cleanText(thinking), s.clock.Now())
	if err = s.requireStreaming(ctx, tag, err, id); err != nil {
		return fmt.Errorf("pgstore: save partial message %q: %w", id, err)
	}
	return nil
}

// requireStreaming turns an UPDATE guarded by status = 'streaming' that
// changed no row into ErrAlreadyFinished or ErrNotFound.
func (s *Store) requireStreaming(ctx context.Context, tag pgconn.CommandTag, err error, id string) error {
	if err != nil || tag.RowsAffected() != 0 {
		return err
	}
	// Nothing changed either way; this read only names the reason.
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM messages WHERE id = $1)`, id).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return history.ErrAlreadyFinished
	}
	return history.ErrNotFound
}

// GetMessage implements history.Store.
func (s *Store) GetMessage(ctx context.Context, id string) (history.Message, error) {
	m, err := scanMessage(s.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM messages WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = history.ErrNotFound
	}
	if err != nil {
		return history.Message{}, fmt.Errorf("pgstore: get message %q: %w", id, err)
	}
	return m, nil
}

// ListMessages implements history.Store.
func (s *Store) ListMessages(ctx context.Context, sessionID string) ([]history.Message, error) {
	msgs, err := s.queryMessages(ctx, sessionID, `SELECT `+messageColumns+` FROM messages
		WHERE session_id = $1 ORDER BY seq`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list messages of session %q: %w", sessionID, err)
	}
	return msgs, nil
}

// RecentMessages implements history.Store.
func (s *Store) RecentMessages(ctx context.Context, sessionID, before string, limit int) ([]history.Message, error) {
	msgs, err := s.recentMessages(ctx, sessionID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("pgstore: recent messages of session %q: %w", sessionID, err)
	}
	return msgs, nil
}

func (s *Store) recentMessages(ctx context.Context, sessionID, before string, limit int) ([]history.Message, error) {
	var beforeSeq *int64
	if before != "" {
		err := s.pool.QueryRow(ctx, `SELECT seq FROM messages WHERE id = $1 AND session_id = $2`,
			before, sessionID).Scan(&beforeSeq)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("message %q: %w", before, history.ErrNotFound)
		}
		if err != nil {
			return nil, err
		}
	}
	// The inner query picks the newest eligible messages, the outer one
	// puts them oldest first.
	return s.queryMessages(ctx, sessionID, `SELECT `+messageColumns+` FROM (
			SELECT * FROM messages
			WHERE session_id = $1
			  AND ($2::bigint IS NULL OR seq < $2)
			  AND NOT (role = 'assistant' AND (status = 'streaming' OR (status = 'failed' AND content = '')))
			ORDER BY seq DESC LIMIT $3
		) AS recent ORDER BY seq`, sessionID, beforeSeq, limitArg(limit))
}

// queryMessages runs a query for messages of one session; when it finds
// none it tells an empty session from an unknown one.
func (s *Store) queryMessages(ctx context.Context, sessionID, query string, args ...any) ([]history.Message, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (history.Message, error) { return scanMessage(row) })
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		var exists bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)`,
			sessionID).Scan(&exists); err != nil {
			return nil, err
		}
		if !exists {
			return nil, history.ErrNotFound
		}
	}
	return out, nil
}

// FailAbandoned implements history.Store. It sees the streaming messages
// of every replica sharing the database, hence olderThan.
func (s *Store) FailAbandoned(ctx context.Context, reason string, olderThan time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE messages SET status = 'failed', error = $1, updated_at = greatest($2, updated_at)
		WHERE status = 'streaming' AND created_at < $3`, cleanText(reason), s.clock.Now(), olderThan)
	if err != nil {
		return 0, fmt.Errorf("pgstore: fail abandoned messages: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

func scanMessage(row pgx.Row) (history.Message, error) {
	var (
		m                   history.Message
		parent              *string
		refs, usage, record []byte
	)
	if err := row.Scan(&m.ID, &m.SessionID, &parent, &m.Role, &m.Content, &m.Thinking, &refs, &m.Status, &usage, &m.Error,
		&m.Model, &record, &m.CreatedAt, &m.UpdatedAt); err != nil {
		return history.Message{}, err
	}
	if parent != nil {
		m.ParentID = *parent
	}
	if record != nil {
		m.Record = new(history.Record)
		if err := json.Unmarshal(record, m.Record); err != nil {
			return history.Message{}, fmt.Errorf("message %q: stored record: %w", m.ID, err)
		}
	}
	if refs != nil {
		if err := json.Unmarshal(refs, &m.References); err != nil {
			return history.Message{}, fmt.Errorf("message %q: stored references: %w", m.ID, err)
		}
		m.References = nilIfEmpty(m.References)
	}
	if usage != nil {
		m.Usage = new(eventbus.Usage)
		if err := json.Unmarshal(usage, m.Usage); err != nil {
			return history.Message{}, fmt.Errorf("message %q: stored usage: %w", m.ID, err)
		}
	}
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return m, nil
}

// encodeJSON encodes references and usage for their jsonb columns: no
// references and no usage are NULL, so references read back as nil
// whether they were nil or empty.
func encodeJSON(refs []eventbus.Reference, u *eventbus.Usage) (refsJSON, usageJSON *string, err error) {
	if len(refs) > 0 {
		b, err := json.Marshal(refs)
		if err != nil {
			return nil, nil, fmt.Errorf("encode references: %w", err)
		}
		refsJSON = new(string(b))
	}
	if u != nil {
		b, err := json.Marshal(u)
		if err != nil {
			return nil, nil, fmt.Errorf("encode usage: %w", err)
		}
		usageJSON = new(string(b))
	}
	return refsJSON, usageJSON, nil
}

// encodeRecord encodes a record for its jsonb column (its text cleaned
// as the other columns' is); an empty record is NULL, so it reads back
// as nil.
func encodeRecord(r *history.Record) (*string, error) {
	if r.Empty() {
		return nil, nil
	}
	c := *r
	c.ToolCalls = slices.Clone(r.ToolCalls)
	for i, tc := range c.ToolCalls {
		tc.ID, tc.Name, tc.Arguments = cleanText(tc.ID), cleanText(tc.Name), cleanText(tc.Arguments)
		tc.Output, tc.Status = cleanText(tc.Output), cleanText(tc.Status)
		c.ToolCalls[i] = tc
	}
	c.Stages = slices.Clone(r.Stages)
	for i, st := range c.Stages {
		st.Name, st.Status, st.Detail = cleanText(st.Name), cleanText(st.Status), cleanText(st.Detail)
		c.Stages[i] = st
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return new(string(b)), nil
}

func nilIfEmpty(refs []eventbus.Reference) []eventbus.Reference {
	if len(refs) == 0 {
		return nil
	}
	return refs
}
