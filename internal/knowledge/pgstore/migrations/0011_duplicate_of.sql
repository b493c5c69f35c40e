-- A background ingest that finds, once its file is read, that the same
-- text is already stored fails naming that document, so that a client can
-- say "already in the knowledge base" rather than "refused".
ALTER TABLE knowledge_ingest ADD COLUMN duplicate_of text NOT NULL DEFAULT '';
