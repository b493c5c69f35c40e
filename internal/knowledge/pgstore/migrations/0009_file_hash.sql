-- A document ingested in the background from a file (PDF, DOCX, ...)
-- keeps the SHA-256 of the file as uploaded, so that the same file sent
-- again is answered as a duplicate at once, before it is parsed, instead
-- of being queued only to fail as one. '' for every other document.
ALTER TABLE knowledge_documents ADD COLUMN file_hash text NOT NULL DEFAULT '';
CREATE INDEX knowledge_documents_file_hash ON knowledge_documents (tenant_id, file_hash) WHERE file_hash <> '';
