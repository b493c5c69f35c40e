package pgstore

import (
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
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
