-- Keep each chunk's terms in its row. A chunk's row (terms ≈1.6 KB,
-- content, embedding) is over PostgreSQL's 2 KB TOAST threshold, and
-- TOAST moved its largest value, the terms, out of line: KeywordSearch,
-- which reads the terms of every matching chunk for ts_rank, then
-- fetched each from the TOAST table (≈3.5 more buffer reads per match;
-- at 20,000 chunks a six-term query took 66–97 ms in the server, 17–23
-- ms with the terms inline). Storage MAIN moves content and embedding
-- out first, and the terms only as a last resort.
ALTER TABLE knowledge_chunks ALTER COLUMN terms SET STORAGE MAIN;

-- The chunks stored so far: a new value of the same terms (concatenating
-- nothing) is stored by the new rule; the same value would keep its
-- out-of-line copy.
UPDATE knowledge_chunks SET terms = terms || ''::tsvector;
