-- Background ingest: a large upload is stored at once as a document being
-- processed (no content, no chunks: never searched), its chunks are written
-- and the document becomes ready in one transaction at the end.
--
-- The status lives in a side table with a row only for documents that are
-- not ready (processing or failed): knowledge_documents keeps its layout
-- (content last, so listing never reads a document's overflow pages) and a
-- ready document costs nothing. No row means ready.
CREATE TABLE knowledge_ingest (
    document_id     TEXT PRIMARY KEY REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    status          TEXT NOT NULL CHECK (status IN ('processing', 'failed')),
    error           TEXT NOT NULL DEFAULT '',       -- why it failed, for the user
    pages_done      INTEGER NOT NULL DEFAULT 0,
    pages_total     INTEGER NOT NULL DEFAULT 0,
    chunks_total    INTEGER NOT NULL DEFAULT 0,
    chunks_embedded INTEGER NOT NULL DEFAULT 0,
    chunks_written  INTEGER NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,     -- ingests started: a restart resumes, a few times at most
    alive_at        TEXT NOT NULL,                  -- last sign of life of its ingest; a stale one is resumed
    upload          BLOB                            -- the file as uploaded, until ready or failed (last: never read by listing)
);

-- ClaimStale: the processing documents whose ingest stopped, oldest first.
CREATE INDEX knowledge_ingest_stale ON knowledge_ingest (alive_at) WHERE status = 'processing';
