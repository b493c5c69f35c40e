// Package knowledgetest is the conformance suite for knowledge.Store: the
// behaviour every implementation (SQLite, PostgreSQL, …) must have, tested
// through the interface only; an implementation's tests call Run. It also
// holds test doubles for the embedding side: a deterministic in-process
// embedder and a fake OpenAI-compatible /v1/embeddings server.
package knowledgetest

import (
	"slices"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// Run runs the suite. open must return a new, empty store on every call;
// subtests run in parallel, each on its own store, and Run closes each
// store when its subtest ends.
func Run(t *testing.T, open func(t *testing.T) knowledge.Store) {
	t.Helper()
	groups := [][]test{documentTests, keywordTests, vectorTests, versionTests, concurrencyTests, tenantTests, pageTests, ingestTests}
	for _, tc := range slices.Concat(groups...) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.run(t, s)
		})
	}
}

// test is one behaviour, run on a fresh store.
type test struct {
	name string
	run  func(t *testing.T, s knowledge.Store)
}

// timeSlack bounds how far a store's clock may be from the test's.
const timeSlack = 5 * time.Minute

// newDoc is a document whose chunks are its paragraphs given.
func newDoc(id, title string, paragraphs ...string) (knowledge.Document, []knowledge.Chunk) {
	content := ""
	chunks := make([]knowledge.Chunk, len(paragraphs))
	for i, p := range paragraphs {
		if i > 0 {
			content += "\n\n"
		}
		content += p
		chunks[i] = knowledge.Chunk{ID: chunkID(id, i), Index: i, Content: p, Tokens: len(p) / 4}
	}
	return knowledge.Document{ID: id, Title: title, Source: id + ".md", MediaType: knowledge.MediaMarkdown, Content: content}, chunks
}

func chunkID(docID string, i int) string { return docID + "-c" + string(rune('a'+i)) }

func add(t *testing.T, s knowledge.Store, doc knowledge.Document, chunks []knowledge.Chunk) knowledge.Document {
	t.Helper()
	got, err := s.AddDocument(t.Context(), doc, chunks)
	if err != nil {
		t.Fatalf("AddDocument(%s): %v", doc.ID, err)
	}
	return got
}

func addParagraphs(t *testing.T, s knowledge.Store, id, title string, paragraphs ...string) knowledge.Document {
	t.Helper()
	doc, chunks := newDoc(id, title, paragraphs...)
	return add(t, s, doc, chunks)
}

// keyword searches the default tenant's chunks.
func keyword(t *testing.T, s knowledge.Store, query string, limit int) []knowledge.Hit {
	t.Helper()
	return keywordIn(t, s, knowledge.DefaultTenant, query, limit)
}

func keywordIn(t *testing.T, s knowledge.Store, tenantID, query string, limit int) []knowledge.Hit {
	t.Helper()
	return keywordInAll(t, s, []string{tenantID}, query, limit)
}

// keywordInAll searches the chunks of several tenants together.
func keywordInAll(t *testing.T, s knowledge.Store, tenantIDs []string, query string, limit int) []knowledge.Hit {
	t.Helper()
	hits, err := s.KeywordSearch(t.Context(), tenantIDs, query, limit)
	if err != nil {
		t.Fatalf("KeywordSearch(%q, %q): %v", tenantIDs, query, err)
	}
	return hits
}

// vector searches the default tenant's chunks.
func vector(t *testing.T, s knowledge.Store, v []float32, limit int) []knowledge.Hit {
	t.Helper()
	return vectorIn(t, s, knowledge.DefaultTenant, v, limit)
}

func vectorIn(t *testing.T, s knowledge.Store, tenantID string, v []float32, limit int) []knowledge.Hit {
	t.Helper()
	hits, err := s.VectorSearch(t.Context(), tenantID, v, limit)
	if err != nil {
		t.Fatalf("VectorSearch(%q, %v): %v", tenantID, v, err)
	}
	return hits
}

func version(t *testing.T, s knowledge.Store) int64 {
	t.Helper()
	v, err := s.Version(t.Context())
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	return v
}

// docIDs returns the distinct document IDs of hits, in order.
func docIDs(hits []knowledge.Hit) []string {
	var ids []string
	for _, h := range hits {
		if !slices.Contains(ids, h.DocumentID) {
			ids = append(ids, h.DocumentID)
		}
	}
	return ids
}

func chunkIDs(hits []knowledge.Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ChunkID
	}
	return ids
}
