-- Messages form a tree: a question follows an answer (or starts the
-- session), an answer follows its question; regenerated answers and
-- edited questions are siblings. A session shows and answers one branch,
-- ending at its current leaf. An assistant message records the model that
-- wrote it and how it was made (record_json: tool calls, stage timings,
-- cited references). A session's title remembers who set it.
ALTER TABLE messages ADD COLUMN parent_id TEXT;                     -- NULL = a root of the tree
ALTER TABLE messages ADD COLUMN model TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN record_json TEXT;                   -- JSON history.Record; NULL when none
ALTER TABLE sessions ADD COLUMN current_leaf TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN title_source TEXT NOT NULL DEFAULT ''; -- '' | 'generated' | 'user'

-- Messages saved before the tree read as one chain: a question follows
-- the message before it, an answer follows the last question before it
-- (so the answers of models asked side by side are siblings).
UPDATE messages SET parent_id = (
    SELECT p.id FROM messages AS p
    WHERE p.session_id = messages.session_id AND p.seq < messages.seq
      AND (messages.role = 'user' OR p.role = 'user')
    ORDER BY p.seq DESC LIMIT 1);
UPDATE sessions SET current_leaf = COALESCE(
    (SELECT id FROM messages WHERE session_id = sessions.id ORDER BY seq DESC LIMIT 1), '');

-- Children of a message (siblings, the newest reply), oldest first.
CREATE INDEX messages_by_parent ON messages (session_id, parent_id, seq);
