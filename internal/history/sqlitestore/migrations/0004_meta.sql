-- Feedback on answers, and summaries of compacted history.

-- At most one feedback per assistant message; it goes with its message
-- (and so with its session). tenant_id and mode are the session's, copied
-- so the export and metrics need no join.
CREATE TABLE feedback (
    message_id TEXT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    tenant_id  TEXT NOT NULL,
    rating     TEXT NOT NULL CHECK (rating IN ('up', 'down')),
    comment    TEXT NOT NULL DEFAULT '',
    reason     TEXT NOT NULL DEFAULT '',
    mode       TEXT NOT NULL DEFAULT '',
    model      TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- The export: a tenant's feedback updated since a time.
CREATE INDEX feedback_by_tenant_updated ON feedback (tenant_id, updated_at, message_id);

-- A summary stands for the messages from_message_id .. to_message_id of
-- its session when history is sent to the model.
CREATE TABLE summaries (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    from_message_id TEXT NOT NULL,
    to_message_id   TEXT NOT NULL,
    messages        INTEGER NOT NULL,
    content         TEXT NOT NULL,
    model           TEXT NOT NULL DEFAULT '',
    created_at      TEXT NOT NULL
);

CREATE INDEX summaries_by_session ON summaries (session_id, seq);
