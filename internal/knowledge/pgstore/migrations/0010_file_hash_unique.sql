-- Documents added at once from a file keep its hash too (0009 named the
-- background ingest only). One processing or ready document per tenant
-- and file: two uploads of
-- the same file at once cannot both be queued (the second finds the first
-- through the index's violation). A failed ingest gives its file up, so
-- the file may be sent again; duplicates a race let in before this step
-- keep only the oldest.
UPDATE knowledge_documents d SET file_hash = ''
    FROM knowledge_ingest i WHERE i.document_id = d.id AND i.status = 'failed';
UPDATE knowledge_documents d SET file_hash = ''
    WHERE d.file_hash <> '' AND EXISTS (SELECT 1 FROM knowledge_documents o
        WHERE o.tenant_id = d.tenant_id AND o.file_hash = d.file_hash AND (o.created_at, o.id) < (d.created_at, d.id));
DROP INDEX knowledge_documents_file_hash;
CREATE UNIQUE INDEX knowledge_documents_file_hash ON knowledge_documents (tenant_id, file_hash) WHERE file_hash <> '';
