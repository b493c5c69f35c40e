package pgstore

import (
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/pgdb/pgdbtest"
)

// Terms written before stemming are rebuilt when a newer chatpipe opens
// the database: "return" then finds "returned".
func TestOpenReindexesTermsOfAnOlderIndex(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	s := openSchema(t, schema)
	doc := knowledge.Document{ID: "r", Title: "Returns", Content: "Items can be returned within 30 days."}
	if _, err := s.AddDocument(t.Context(), doc, []knowledge.Chunk{{ID: "r-0", Index: 0, Content: doc.Content}}); err != nil {
		t.Fatal(err)
	}
	// As the store wrote terms before stemming.
	for _, stmt := range []string{
		`UPDATE knowledge_chunks SET terms = to_tsvector('simple', 'returns items can be returned within 30 days')`,
		`UPDATE knowledge_state SET terms_version = 0`,
	} {
		if _, err := s.pool.Exec(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	if hits, err := s.KeywordSearch(t.Context(), []string{knowledge.DefaultTenant}, "return policy", 10); err != nil || len(hits) != 0 {
		t.Fatalf("before re-indexing, KeywordSearch = %+v, %v; want nothing (the old terms are unstemmed)", hits, err)
	}
	s.Close()

	s = openSchema(t, schema)
	hits, err := s.KeywordSearch(t.Context(), []string{knowledge.DefaultTenant}, "return policy", 10)
	if err != nil || len(hits) != 1 || hits[0].Title != "Returns" {
		t.Fatalf("after reopening, KeywordSearch(return policy) = %+v, %v; want Returns", hits, err)
	}
	if n, err := reindexTerms(t.Context(), s.pool); err != nil || n != 0 {
		t.Errorf("second reindex = %d, %v; want nothing to do", n, err)
	}
}

// Migration 0008 keeps the terms in the chunk's row (storage MAIN), and
// rewrites the terms stored before it without changing them: the same
// search finds the same chunks with the same scores.
func TestTermsStayInTheRowAndMigrationKeepsThem(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	s := openSchema(t, schema)
	emb := knowledgetest.HashEmbedder{Dims: 256}
	if err := knowledgetest.NewScaleCorpus(20, 5).Load(t.Context(), s, knowledge.DefaultTenant, &emb); err != nil {
		t.Fatal(err)
	}
	var storage string
	if err := s.pool.QueryRow(t.Context(), `SELECT attstorage FROM pg_attribute
		WHERE attrelid = 'knowledge_chunks'::regclass AND attname = 'terms'`).Scan(&storage); err != nil || storage != "m" {
		t.Fatalf("terms storage = %q, %v; want m (MAIN)", storage, err)
	}
	// The first generated query that finds something in this small corpus
	// (its vocabulary comes from the sample documents, so which one
	// varies as they change).
	var query string
	var before []knowledge.Hit
	for _, q := range knowledgetest.NewScaleCorpus(20, 5).Queries {
		hits, err := s.KeywordSearch(t.Context(), []string{knowledge.DefaultTenant}, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) > 0 {
			query, before = q, hits
			break
		}
	}
	if len(before) == 0 {
		t.Fatal("no generated query finds anything in the corpus")
	}
	// As before 0008: the column's default storage, the migration not run.
	for _, stmt := range []string{
		`ALTER TABLE knowledge_chunks ALTER COLUMN terms SET STORAGE EXTENDED`,
		`DELETE FROM knowledge_migrations WHERE version = 8`,
	} {
		if _, err := s.pool.Exec(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = openSchema(t, schema)
	after, err := s.KeywordSearch(t.Context(), []string{knowledge.DefaultTenant}, query, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("after the migration %d hits, before %d", len(after), len(before))
	}
	for i := range after {
		if after[i].ChunkID != before[i].ChunkID || after[i].Score != before[i].Score {
			t.Errorf("hit %d after the migration: %s (%v), before: %s (%v)", i, after[i].ChunkID, after[i].Score, before[i].ChunkID, before[i].Score)
		}
	}
	if err := s.pool.QueryRow(t.Context(), `SELECT attstorage FROM pg_attribute
		WHERE attrelid = 'knowledge_chunks'::regclass AND attname = 'terms'`).Scan(&storage); err != nil || storage != "m" {
		t.Fatalf("after the migration, terms storage = %q, %v; want m (MAIN)", storage, err)
	}
}
