package sqlitestore

import (
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// KeywordSearchTitleTerms finds a term in a document's title field (its
// title and lead, the first paragraph), never in a chunk's text alone.
func TestKeywordSearchTitleTermsMatchesTheLeadOnly(t *testing.T) {
	s := openFile(t, MemoryPath)
	defer s.Close()
	addDoc(t, s, "lead", "fork - create a child process\n\nThe call returns twice.", nil)
	addDoc(t, s, "text", "wait - wait for a process\n\nA child made by fork must be waited for.", nil)
	hits, err := s.KeywordSearchTitleTerms(t.Context(), []string{knowledge.DefaultTenant}, []string{"fork"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].DocumentID != "lead" || !(hits[0].Score > 0) {
		t.Fatalf("hits = %+v; want only lead, with a positive score", hits)
	}
	all, err := s.KeywordSearchTerms(t.Context(), []string{knowledge.DefaultTenant}, []string{"fork"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Fatalf("KeywordSearchTerms found %d chunks; want both", len(all))
	}
	if hits, err := s.KeywordSearchTitleTerms(t.Context(), []string{"another"}, []string{"fork"}, 10); err != nil || len(hits) != 0 {
		t.Fatalf("another tenant: hits = %+v, %v; want none", hits, err)
	}
}
