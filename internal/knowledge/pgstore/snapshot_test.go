package pgstore

import (
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/pgdb/pgdbtest"
)

// While documents are added and deleted, every search's rankings see
// one state: a document is in all of them or in none. (That they rank as
// the one-ranking methods do is in the conformance suite.)
func TestKeywordSearchesSeeOneStateWhileDocumentsChange(t *testing.T) {
	s := openSchema(t, pgdbtest.NewSchema(t))
	tenants := []string{knowledge.DefaultTenant}
	queries := []knowledge.KeywordQuery{{Terms: []string{"heron"}}, {Terms: []string{"heron"}}, {Terms: []string{"heron"}}}
	done := make(chan struct{})
	writerErr := make(chan error, 1)
	go func() {
		defer close(writerErr)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			id := "heron"
			if _, err := s.AddDocument(t.Context(), knowledge.Document{ID: id, Title: "Heron", Content: "heron notes"},
				[]knowledge.Chunk{{ID: id + "-0", Content: "heron notes"}}); err != nil {
				writerErr <- err
				return
			}
			if err := s.DeleteDocument(t.Context(), id); err != nil {
				writerErr <- err
				return
			}
		}
	}()
	mixed := 0
	for range 1000 {
		got, err := s.KeywordSearches(t.Context(), tenants, queries, 10)
		if err != nil {
			close(done)
			t.Fatal(err)
		}
		if len(got[0]) != len(got[1]) || len(got[1]) != len(got[2]) {
			mixed++
		}
	}
	close(done)
	if err := <-writerErr; err != nil {
		t.Fatal(err)
	}
	if mixed > 0 {
		t.Fatalf("%d of 1000 searches fused rankings of two states of the knowledge base", mixed)
	}
}
