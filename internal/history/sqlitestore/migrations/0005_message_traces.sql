-- The turn inspector's record of an assistant message: what each stage
-- did (JSON, bounded by telemetry.inspector.max_bytes). A table of its
-- own, deleted with its message (and so with its session).
CREATE TABLE message_traces (
    message_id TEXT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    record     TEXT NOT NULL,
    created_at TEXT NOT NULL
);

-- PurgeTraces: the records older than the retention.
CREATE INDEX message_traces_by_created ON message_traces (created_at);
