-- Background ingest: a large upload is stored at once as a document being
-- processed (no content, no chunks: never searched); its chunks are written
-- and the document becomes ready in one transaction at the end.
--
-- The status lives in a side table with a row only for documents that are
-- not ready (processing or failed), as in the SQLite store: a ready
-- document costs nothing, and no row means ready.
CREATE TABLE knowledge_ingest (
    document_id     text PRIMARY KEY REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    status          text NOT NULL CHECK (status IN ('processing', 'failed')),
    error           text NOT NULL DEFAULT '',       -- why it failed, for the user
    pages_done      integer NOT NULL DEFAULT 0,
    pages_total     integer NOT NULL DEFAULT 0,
    chunks_total    integer NOT NULL DEFAULT 0,
    chunks_embedded integer NOT NULL DEFAULT 0,
    chunks_written  integer NOT NULL DEFAULT 0,
    attempts        integer NOT NULL DEFAULT 0,     -- ingests started: a restart resumes, a few times at most
    alive_at        timestamptz NOT NULL,           -- last sign of life of its ingest; a stale one is resumed by any replica
    upload          bytea                           -- the file as uploaded, until ready or failed
);

-- ClaimStale: the processing documents whose ingest stopped.
CREATE INDEX knowledge_ingest_stale ON knowledge_ingest (alive_at) WHERE status = 'processing';
