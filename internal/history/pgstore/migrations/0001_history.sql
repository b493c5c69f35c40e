-- Sessions and their messages. Times are timestamptz (microseconds, the
-- same precision the SQLite store keeps); the store stamps them, see
-- clock in pgstore.go.

CREATE TABLE sessions (
    id         text PRIMARY KEY,
    -- The owner of the API key; 'default' when the server runs without keys.
    tenant_id  text NOT NULL DEFAULT 'default',
    title      text NOT NULL DEFAULT '',
    mode       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

-- ListSessions of one tenant: most recently updated first.
CREATE INDEX sessions_by_tenant_updated ON sessions (tenant_id, updated_at DESC, id DESC);

CREATE TABLE messages (
    id              text PRIMARY KEY,
    -- Insertion order: orders a session's messages even when their times
    -- tie or come from replicas whose clocks disagree. StartTurn takes the
    -- session's row lock before drawing it, so within a session it also
    -- follows commit order.
    seq             bigint GENERATED ALWAYS AS IDENTITY,
    session_id      text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    role            text NOT NULL,
    content         text NOT NULL DEFAULT '',
    thinking        text NOT NULL DEFAULT '',
    references_json jsonb,         -- array of eventbus.Reference; NULL when none
    status          text NOT NULL,
    usage_json      jsonb,         -- eventbus.Usage; NULL when unknown
    error           text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

-- ListMessages, RecentMessages and the ON DELETE CASCADE from sessions.
CREATE INDEX messages_by_session ON messages (session_id, seq);

-- FailAbandoned: finds the few streaming rows without a table scan.
CREATE INDEX messages_streaming ON messages (id) WHERE status = 'streaming';
