-- Feedback on answers, and summaries of compacted history.

-- At most one feedback per assistant message; it goes with its message
-- (and so with its session). tenant_id and mode are the session's, copied
-- so the export and metrics need no join.
CREATE TABLE feedback (
    message_id text PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    session_id text NOT NULL,
    tenant_id  text NOT NULL,
    rating     text NOT NULL CHECK (rating IN ('up', 'down')),
    comment    text NOT NULL DEFAULT '',
    reason     text NOT NULL DEFAULT '',
    mode       text NOT NULL DEFAULT '',
    model      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

-- The export: a tenant's feedback updated since a time.
CREATE INDEX feedback_by_tenant_updated ON feedback (tenant_id, updated_at, message_id);

-- A summary stands for the messages from_message_id .. to_message_id of
-- its session when history is sent to the model.
CREATE TABLE summaries (
    id              text PRIMARY KEY,
    seq             bigint GENERATED ALWAYS AS IDENTITY,
    session_id      text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    from_message_id text NOT NULL,
    to_message_id   text NOT NULL,
    messages        integer NOT NULL,
    content         text NOT NULL,
    model           text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL
);

CREATE INDEX summaries_by_session ON summaries (session_id, seq);
