-- Shared documents belong to the reserved tenant '_shared' (every tenant
-- lists, searches and reads them; see knowledge.SharedTenant), so sharing
-- needs no new index. What the tenant no longer says is who added a shared
-- document: added_by keeps the uploader's tenant. '' (every document
-- stored before) means the document's own tenant. It is read only with a
-- document's content, so listing still stops before the content.
ALTER TABLE knowledge_documents ADD COLUMN added_by TEXT NOT NULL DEFAULT '';
