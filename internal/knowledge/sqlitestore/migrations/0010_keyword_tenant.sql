-- The keyword index gains a column holding one term per chunk that names
-- its tenant (sqlitestore's tenantTerm), so a search of some tenants asks
-- FTS5 for their chunks only: before, FTS5 ranked every tenant's matches
-- and each was dropped by a look-up afterwards, so a tenant with a large
-- knowledge base made every other tenant's searches slow. FTS5 cannot add
-- a column: the table is made again, and terms_version 0 has Open
-- re-index every chunk before it serves (a transaction of its own, after
-- this one). The keyword search no longer reads knowledge_chunks_tenant_of.
DROP INDEX knowledge_chunks_tenant_of;
DROP TABLE knowledge_fts;
CREATE VIRTUAL TABLE knowledge_fts USING fts5 (
    title, heading, body, tenant,
    content = '',
    contentless_delete = 1,
    tokenize = "unicode61 remove_diacritics 2 categories 'L* N* Co M*'"
);
UPDATE knowledge_state SET terms_version = 0;
