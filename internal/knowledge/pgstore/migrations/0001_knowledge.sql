-- The knowledge base: documents, their chunks with their keyword terms
-- and embeddings, and the version counter. It may share a schema with the
-- history store, so every name starts with knowledge_.

CREATE TABLE knowledge_documents (
    id           text PRIMARY KEY,
    -- Whoever the request's API key belongs to; 'default' without keys.
    -- It never changes: the chunks' foreign key refuses the update.
    tenant_id    text NOT NULL DEFAULT 'default',
    title        text NOT NULL,
    source       text NOT NULL DEFAULT '',
    media_type   text NOT NULL DEFAULT '',
    content_hash text NOT NULL,      -- hex SHA-256 of content: a tenant's documents are deduplicated by it
    bytes        integer NOT NULL,
    chunk_count  integer NOT NULL,
    embedded     boolean NOT NULL,   -- every chunk has an embedding
    created_at   timestamptz NOT NULL,
    content      text NOT NULL,
    CONSTRAINT knowledge_documents_content_unique UNIQUE (tenant_id, content_hash),
    -- The target of the chunks' (document_id, tenant_id) foreign key.
    UNIQUE (id, tenant_id)
);

-- A tenant's documents newest first.
CREATE INDEX knowledge_documents_by_tenant ON knowledge_documents (tenant_id, created_at DESC, id DESC);

CREATE TABLE knowledge_chunks (
    -- Names a chunk in the in-memory vector index.
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id          text NOT NULL UNIQUE,
    document_id text NOT NULL,
    -- A copy of the document's tenant, so that both searches filter chunks
    -- without a join; the foreign key keeps it the document's.
    tenant_id   text NOT NULL,
    idx         integer NOT NULL,
    heading     text NOT NULL DEFAULT '',
    content     text NOT NULL,
    tokens      integer NOT NULL,
    -- knowledge.IndexText of the document's title, the heading and the
    -- content (lower-cased words, CJK bigrams, Latin diacritics removed),
    -- parsed with the simple configuration: no stemming, no stop words.
    terms       tsvector NOT NULL,
    embedding   real[],              -- NULL when not embedded
    UNIQUE (document_id, idx),
    FOREIGN KEY (document_id, tenant_id) REFERENCES knowledge_documents (id, tenant_id) ON DELETE CASCADE
);

-- KeywordSearch: the chunks matching any query term, then the tenant's.
CREATE INDEX knowledge_chunks_terms ON knowledge_chunks USING gin (terms);
CREATE INDEX knowledge_chunks_by_tenant ON knowledge_chunks (tenant_id);

-- One row: the version counter, bumped by every add and delete (which
-- lock this row first, so versions follow commit order across replicas).
-- It starts at the creation time in microseconds, so a database created
-- anew does not repeat the versions of an old one (a cache may outlive it).
CREATE TABLE knowledge_state (
    id      integer PRIMARY KEY CHECK (id = 1),
    version bigint NOT NULL
);
INSERT INTO knowledge_state (id, version) VALUES (1, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint);
