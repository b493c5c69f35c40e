-- Documents belong to a tenant (whoever the request's API key belongs to):
-- listing, deduplication and search see one tenant's documents only. The
-- documents stored before tenants existed become the tenant 'default', the
-- tenant of the open (no API keys) mode.
--
-- SQLite cannot drop the UNIQUE (content_hash) of 0001, so the table is
-- rebuilt as https://sqlite.org/lang_altertable.html#otheralter says:
-- migrate runs every step with foreign keys off (dropping the old table
-- must not cascade to the chunks) and checks them before committing.

CREATE TABLE knowledge_documents_new (
    id           TEXT PRIMARY KEY,
    -- Early in the row, and content last: listing and the tenant check read
    -- a row without reaching the content's overflow pages.
    tenant_id    TEXT NOT NULL DEFAULT 'default',
    title        TEXT NOT NULL,
    source       TEXT NOT NULL DEFAULT '',
    media_type   TEXT NOT NULL DEFAULT '',
    content_hash TEXT NOT NULL,              -- hex SHA-256 of content: a tenant's documents are deduplicated by it
    bytes        INTEGER NOT NULL,
    chunk_count  INTEGER NOT NULL,
    embedded     INTEGER NOT NULL,           -- 1 when every chunk has an embedding
    created_at   TEXT NOT NULL,
    content      TEXT NOT NULL,
    UNIQUE (tenant_id, content_hash)
);

INSERT INTO knowledge_documents_new
    (id, tenant_id, title, source, media_type, content_hash, bytes, chunk_count, embedded, created_at, content)
SELECT id, 'default', title, source, media_type, content_hash, bytes, chunk_count, embedded, created_at, content
FROM knowledge_documents;

-- Takes knowledge_documents_by_created with it: documents are now listed
-- per tenant only.
DROP TABLE knowledge_documents;
ALTER TABLE knowledge_documents_new RENAME TO knowledge_documents;

-- A tenant's documents newest first: listing and counting from the index
-- alone.
CREATE INDEX knowledge_documents_by_tenant ON knowledge_documents (tenant_id, created_at, id);

-- A chunk carries its document's tenant too, so that the keyword search
-- can keep a tenant's matches with one look-up in a small index (seq ->
-- tenant) per match, instead of reading each matching chunk's row (its
-- text and embedding) and then its document. The triggers keep the copy
-- true: a chunk's tenant is its document's, and a document's tenant
-- never changes.
ALTER TABLE knowledge_chunks ADD COLUMN tenant_id TEXT NOT NULL DEFAULT 'default';
CREATE INDEX knowledge_chunks_tenant_of ON knowledge_chunks (seq, tenant_id);

CREATE TRIGGER knowledge_chunks_tenant_is_the_documents BEFORE INSERT ON knowledge_chunks
WHEN NEW.tenant_id IS NOT (SELECT tenant_id FROM knowledge_documents WHERE id = NEW.document_id)
BEGIN
    SELECT RAISE(ABORT, 'a chunk''s tenant_id must be its document''s');
END;

CREATE TRIGGER knowledge_chunks_tenant_is_fixed BEFORE UPDATE OF tenant_id ON knowledge_chunks
WHEN NEW.tenant_id IS NOT OLD.tenant_id
BEGIN
    SELECT RAISE(ABORT, 'a chunk''s tenant_id never changes');
END;

CREATE TRIGGER knowledge_documents_tenant_is_fixed BEFORE UPDATE OF tenant_id ON knowledge_documents
WHEN NEW.tenant_id IS NOT OLD.tenant_id
BEGIN
    SELECT RAISE(ABORT, 'a document''s tenant_id never changes');
END;
