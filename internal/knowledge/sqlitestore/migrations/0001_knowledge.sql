-- The knowledge base: documents, their chunks, and the keyword index. It
-- shares the database file with the history store, so every name starts
-- with knowledge_. Times are UTC text with microseconds
-- ('2006-01-02T15:04:05.000000Z'): fixed width, so they sort as text.

CREATE TABLE knowledge_documents (
    id           TEXT PRIMARY KEY,
    title        TEXT NOT NULL,
    source       TEXT NOT NULL DEFAULT '',
    media_type   TEXT NOT NULL DEFAULT '',
    content      TEXT NOT NULL,
    content_hash TEXT NOT NULL UNIQUE,   -- hex SHA-256 of content: documents are deduplicated by it
    bytes        INTEGER NOT NULL,
    chunk_count  INTEGER NOT NULL,
    embedded     INTEGER NOT NULL,       -- 1 when every chunk has an embedding
    created_at   TEXT NOT NULL
);

-- Documents: newest first.
CREATE INDEX knowledge_documents_by_created ON knowledge_documents (created_at, id);

CREATE TABLE knowledge_chunks (
    -- An alias of the rowid: the keyword index refers to chunks by it.
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    document_id TEXT NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,
    heading     TEXT NOT NULL DEFAULT '',
    content     TEXT NOT NULL,
    tokens      INTEGER NOT NULL,
    embedding   BLOB,                    -- little-endian float32s; NULL when not embedded
    UNIQUE (document_id, idx)
);

-- The keyword index stores terms (knowledge.IndexText: lower-cased words,
-- CJK bigrams), not the text itself, so it is contentless; rowid is
-- knowledge_chunks.seq. Marks count as token characters so that a term
-- such as a Thai or Devanagari syllable is not cut at its vowel signs.
CREATE VIRTUAL TABLE knowledge_fts USING fts5 (
    title, heading, body,
    content = '',
    contentless_delete = 1,
    tokenize = "unicode61 remove_diacritics 2 categories 'L* N* Co M*'"
);

-- However a chunk goes (its document deleted, the cascade), its index
-- entry goes with it in the same transaction.
CREATE TRIGGER knowledge_chunks_unindex AFTER DELETE ON knowledge_chunks BEGIN
    DELETE FROM knowledge_fts WHERE rowid = old.seq;
END;

-- One row: the version counter, bumped by every add and delete. It starts
-- at the creation time in microseconds, so a database created anew does
-- not repeat the versions of an old one (a cache may outlive it).
CREATE TABLE knowledge_state (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO knowledge_state (id, version) VALUES (1, CAST(unixepoch('subsec') * 1000000 AS INTEGER));
