-- A chunk knows the page (PDF) or slide (PPTX) it is on, so a reference
-- can say "p. 3"; 0 for sources without pages and for chunks stored
-- before pages existed.
ALTER TABLE knowledge_chunks ADD COLUMN page integer NOT NULL DEFAULT 0;
