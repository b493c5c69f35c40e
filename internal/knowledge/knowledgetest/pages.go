package knowledgetest

import (
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// pageTests: a chunk's page (knowledge migration 0003) is stored and
// comes back from Chunks and from both searches.
var pageTests = []test{
	{"ChunkPagesComeBackFromChunksAndSearches", func(t *testing.T, s knowledge.Store) {
		doc, chunks := newDoc("manual", "Crane manual", "Inspect the hoist cable daily.", "Stop lifting above fifteen metres per second of wind.")
		chunks[0].Page, chunks[1].Page = 2, 3
		chunks[1].Embedding = []float32{0, 1, 0}
		add(t, s, doc, chunks)
		got, err := s.Chunks(t.Context(), "manual")
		if err != nil || len(got) != 2 || got[0].Page != 2 || got[1].Page != 3 {
			t.Fatalf("Chunks = %+v, %v; want pages 2 and 3", got, err)
		}
		if hits := keyword(t, s, "fifteen metres wind", 5); len(hits) != 1 || hits[0].Page != 3 {
			t.Fatalf("KeywordSearch = %+v, want the page-3 chunk", hits)
		}
		if hits := vector(t, s, []float32{0, 1, 0}, 5); len(hits) != 1 || hits[0].Page != 3 {
			t.Fatalf("VectorSearch = %+v, want the page-3 chunk", hits)
		}
		// A chunk without a page keeps 0.
		addParagraphs(t, s, "notes", "Notes", "Grease the slewing ring.")
		if hits := keyword(t, s, "slewing ring", 5); len(hits) != 1 || hits[0].Page != 0 {
			t.Fatalf("KeywordSearch = %+v, want page 0", hits)
		}
	}},
}
