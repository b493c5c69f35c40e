package sqlitestore

import (
	"reflect"
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// KeywordSearches runs a search's rankings in one read transaction and
// ranks each as the one-ranking methods do: a question (with its
// proximity bonus), terms as given, terms in the title field alone, and
// one with no terms, which finds nothing.
func TestKeywordSearchesRankAsTheOneRankingMethods(t *testing.T) {
	s := openFile(t, MemoryPath)
	defer s.Close()
	addDoc(t, s, "fork", "fork - create a child process\n\nThe child process is a copy of the calling process.", nil)
	addDoc(t, s, "wait", "wait - wait for a process\n\nA child made by fork must be waited for.", nil)
	addDoc(t, s, "pipe", "pipe - create a pipe\n\nA pipe joins two processes; a child inherits it.", nil)
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
	title, err := s.KeywordSearchTitleTerms(t.Context(), tenants, queries[2].Terms, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]knowledge.Hit{question, terms, title, nil}
	if len(question) != 3 || len(terms) != 3 || len(title) != 1 || !reflect.DeepEqual(got, want) {
		t.Fatalf("KeywordSearches = %+v;\nwant %+v", got, want)
	}
	other, err := s.KeywordSearches(t.Context(), []string{"another"}, queries, 10)
	if err != nil || len(other) != len(queries) || other[0] != nil || other[1] != nil || other[2] != nil {
		t.Fatalf("another tenant: %+v, %v; want no hits for each query", other, err)
	}

	// Another tenant's documents turn the tenant filter on: every ranking
	// keeps to the tenants searched, a ranking with no terms first
	// included.
	if _, err := s.AddDocument(t.Context(), knowledge.Document{ID: "theirs", TenantID: "another", Title: "fork",
		Content: "fork - their own fork of a child process"},
		[]knowledge.Chunk{{ID: "theirs-0", Content: "fork - their own fork of a child process"}}); err != nil {
		t.Fatal(err)
	}
	filtered, err := s.KeywordSearches(t.Context(), tenants, append([]knowledge.KeywordQuery{queries[3]}, queries[:3]...), 10)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(docs(filtered[1:]), docs(want[:3])) || filtered[0] != nil {
		t.Fatalf("beside another tenant: %v; want no hits, then %v", docs(filtered), docs(want[:3]))
	}
}

// docs returns each ranking's document ids, in order.
func docs(rankings [][]knowledge.Hit) [][]string {
	out := make([][]string, len(rankings))
	for i, hits := range rankings {
		for _, h := range hits {
			out[i] = append(out[i], h.DocumentID)
		}
	}
	return out
}
