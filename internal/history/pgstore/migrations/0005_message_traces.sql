-- The turn inspector's record of an assistant message: what each stage
-- did (JSON, bounded by telemetry.inspector.max_bytes). A table of its
-- own, deleted with its message (and so with its session).
CREATE TABLE message_traces (
    message_id text PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    record     jsonb NOT NULL,
    created_at timestamptz NOT NULL
);

-- PurgeTraces: the records older than the retention.
CREATE INDEX message_traces_by_created ON message_traces (created_at);
