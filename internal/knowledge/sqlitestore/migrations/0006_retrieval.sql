-- Which version of knowledge.Terms the keyword index was built with. The
-- terms are computed in Go (stemming, CJK bigrams), so SQL cannot rebuild
-- them: Open compares this column with knowledge.TermsVersion and, when it
-- differs, re-indexes every chunk in one transaction and records the new
-- version. 0 is every index built before the column existed (no stemming).
ALTER TABLE knowledge_state ADD COLUMN terms_version INTEGER NOT NULL DEFAULT 0;
