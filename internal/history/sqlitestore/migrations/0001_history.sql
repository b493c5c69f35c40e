-- Sessions and their messages. Times are UTC text with microseconds
-- ('2006-01-02T15:04:05.000000Z'): fixed width, so they sort as text and
-- read well in the sqlite3 shell.

CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    title      TEXT NOT NULL DEFAULT '',
    mode       TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- ListSessions: most recently updated first.
CREATE INDEX sessions_by_updated ON sessions (updated_at, id);

CREATE TABLE messages (
    -- Insertion order: an alias of the rowid, so it survives VACUUM and
    -- orders a session's messages even when their times tie.
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    role            TEXT NOT NULL,
    content         TEXT NOT NULL DEFAULT '',
    thinking        TEXT NOT NULL DEFAULT '',
    references_json TEXT,          -- JSON array of eventbus.Reference; NULL when none
    status          TEXT NOT NULL,
    usage_json      TEXT,          -- JSON eventbus.Usage; NULL when unknown
    error           TEXT NOT NULL DEFAULT '',
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);

-- ListMessages, RecentMessages and the ON DELETE CASCADE from sessions.
CREATE INDEX messages_by_session ON messages (session_id, seq);

-- FailAbandoned: finds the few streaming rows without a table scan.
CREATE INDEX messages_streaming ON messages (id) WHERE status = 'streaming';
