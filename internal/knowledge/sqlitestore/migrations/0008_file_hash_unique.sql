-- Documents added at once from a file keep its hash too (0007 named the
-- background ingest only). One processing or ready document per tenant
-- and file: two uploads of
-- the same file at once cannot both be queued (the second finds the first
-- through the index's violation). A failed ingest gives its file up, so
-- the file may be sent again; duplicates a race let in before this step
-- keep only the oldest.
UPDATE knowledge_documents SET file_hash = ''
    WHERE id IN (SELECT document_id FROM knowledge_ingest WHERE status = 'failed');
UPDATE knowledge_documents SET file_hash = ''
    WHERE file_hash <> '' AND EXISTS (SELECT 1 FROM knowledge_documents AS o
        WHERE o.tenant_id = knowledge_documents.tenant_id AND o.file_hash = knowledge_documents.file_hash
          AND (o.created_at, o.id) < (knowledge_documents.created_at, knowledge_documents.id));
DROP INDEX knowledge_documents_file_hash;
CREATE UNIQUE INDEX knowledge_documents_file_hash ON knowledge_documents (tenant_id, file_hash) WHERE file_hash <> '';
