package pgstore

import (
	"reflect"
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/pgdb/pgdbtest"
)

// KeywordSearches runs a search's rankings in one snapshot and ranks each
// as the one-ranking methods do: a question, terms as given, a
// title-only ranking (none here: PostgreSQL has no lead score) and one
// with no terms, which finds nothing; other tenants' chunks take no
// place.
func TestKeywordSearchesRankAsTheOneRankingMethods(t *testing.T) {
	s := openSchema(t, pgdbtest.NewSchema(t))
	addDoc(t, s, "fork", "fork - create a child process\n\nThe child process is a copy of the calling process.", nil)
	addDoc(t, s, "wait", "wait - wait for a process\n\nA child made by fork must be waited for.", nil)
	addDoc(t, s, "pipe", "pipe - create a pipe\n\nA pipe joins two processes; a child inherits it.", nil)
	if _, err := s.AddDocument(t.Context(), knowledge.Document{ID: "theirs", TenantID: "another", Title: "fork",
		Content: "fork - their own fork of a child process"},
		[]knowledge.Chunk{{ID: "theirs-0", Content: "fork - their own fork of a child process"}}); err != nil {
		t.Fatal(err)
	}
	tenants := []string{knowledge.DefaultTenant}
	queries := []knowledge.KeywordQuery{
		{Query: "how is a child process created"},
		{Terms: []string{"fork", "pipe"}},
		{Terms: []string{"fork"}, TitleOnly: true},
		{Query: "?! —"},
	}
	got, err := s.KeywordSearches(t.Context(), tenants, queries, 10)
	if err != nil {
		t.Fatal(err)
	}
	question, err := s.KeywordSearch(t.Context(), tenants, queries[0].Query, 10)
	if err != nil {
		t.Fatal(err)
	}
	terms, err := s.KeywordSearchTerms(t.Context(), tenants, queries[1].Terms, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]knowledge.Hit{question, terms, nil, nil}
	if len(question) != 3 || len(terms) != 3 || !reflect.DeepEqual(got, want) {
		t.Fatalf("KeywordSearches = %+v;\nwant %+v", got, want)
	}
	one, err := s.KeywordSearches(t.Context(), tenants, queries[1:2], 10)
	if err != nil || !reflect.DeepEqual(one, want[1:2]) {
		t.Fatalf("one ranking: %+v, %v; want %+v", one, err, want[1:2])
	}
	none, err := s.KeywordSearches(t.Context(), []string{"nobody"}, queries, 10)
	if err != nil || len(none) != len(queries) || none[0] != nil || none[1] != nil {
		t.Fatalf("a tenant with no documents: %+v, %v", none, err)
	}
}

// While documents are added and deleted, every search's rankings see
// one state: a document is in all of them or in none.
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
