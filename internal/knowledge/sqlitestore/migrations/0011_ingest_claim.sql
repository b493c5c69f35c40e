-- Each background ingest of a document holds a claim: 1 when the upload
-- is begun, one more each time a stale ingest is claimed again, never
-- reused. Progress, release, failure and finish name the claim, so a
-- process that lost the document to another (its heartbeat failed for
-- stale_after) can no longer fail it, release it or overwrite its
-- progress while the other ingests it.
ALTER TABLE knowledge_ingest ADD COLUMN claim INTEGER NOT NULL DEFAULT 1;
