-- Sessions belong to a tenant (the API key's owner); messages belong to
-- their session. Data from before tenants belongs to the open-mode tenant.
ALTER TABLE sessions ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default';

-- ListSessions of one tenant: most recently updated first.
CREATE INDEX sessions_by_tenant_updated ON sessions (tenant_id, updated_at, id);
DROP INDEX sessions_by_updated;
