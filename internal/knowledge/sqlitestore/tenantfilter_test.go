package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
)

// holdsOnly decides whether the keyword search may leave its tenant filter
// out: only when no document belongs to another tenant, whatever the
// tenants' names sort next to.
func TestHoldsOnlyTheTenantsSearched(t *testing.T) {
	ctx := context.Background()
	s := openFile(t, filepath.Join(t.TempDir(), "chatpipe.db"))
	defer s.Close()
	check := func(want bool, tenants ...string) {
		t.Helper()
		tx, err := s.reader.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if got, err := holdsOnly(ctx, tx, tenants); err != nil || got != want {
			t.Errorf("holdsOnly(%q) = %v, %v; want %v", tenants, got, err, want)
		}
	}
	check(true, knowledge.DefaultTenant) // nothing stored
	add := func(tenant, id string) {
		t.Helper()
		if _, err := s.AddDocument(ctx, knowledge.Document{ID: id, TenantID: tenant, Content: id},
			[]knowledge.Chunk{{ID: id + "-0", Content: id}}); err != nil {
			t.Fatal(err)
		}
	}
	add("b", "b1")
	add("b", "b2")
	check(true, "b")
	check(true, "a", "b", "c")
	check(false, "a")
	add(knowledge.SharedTenant, "s1")
	check(false, "b")
	check(true, "b", knowledge.SharedTenant)
	add("c", "c1")
	check(false, "b", knowledge.SharedTenant)
	check(true, "c", "b", knowledge.SharedTenant)
	add("a", "a1")
	check(false, "c", "b", knowledge.SharedTenant)
}

// Without the tenant filter the ranking is the filtered one, hit for hit.
func TestUnfilteredRankingIsTheFilteredOne(t *testing.T) {
	ctx := context.Background()
	s := openFile(t, filepath.Join(t.TempDir(), "chatpipe.db"))
	defer s.Close()
	corpus := knowledgetest.NewScaleCorpus(40, 10)
	if err := corpus.Load(ctx, s, knowledge.DefaultTenant, nil); err != nil {
		t.Fatal(err)
	}
	tenants := []string{knowledge.DefaultTenant}
	total := 0
	for i, q := range corpus.Queries[:100] {
		got, err := s.keywordSearch(ctx, tenants, knowledge.QueryTerms(q), knowledge.QueryProximities(q), 20, false)
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.keywordSearch(ctx, tenants, knowledge.QueryTerms(q), knowledge.QueryProximities(q), 20, true)
		if err != nil {
			t.Fatal(err)
		}
		total += len(got)
		if len(got) != len(want) {
			t.Fatalf("query %d %q: %d hits, filtered %d", i, q, len(got), len(want))
		}
		for k := range got {
			if got[k].ChunkID != want[k].ChunkID || got[k].Score != want[k].Score || got[k].Content != want[k].Content {
				t.Fatalf("query %d %q, hit %d: %s (%v), filtered %s (%v)", i, q, k, got[k].ChunkID, got[k].Score, want[k].ChunkID, want[k].Score)
			}
		}
	}
	if total < 1000 {
		t.Fatalf("%d hits in all; the corpus is too small to compare rankings", total)
	}
}
