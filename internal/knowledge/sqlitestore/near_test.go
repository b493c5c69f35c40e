package sqlitestore

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
)

// On a file, a question's word pairs are scored on a second connection
// while its terms are ranked (rankNear): the hits are the same as when
// both are read in the search's own transaction (the path of an
// in-memory store, and of a search that finds every slot taken), with
// and without the tenant filter, one search at a time or many at once
// (more than the slots and the readers: none may wait forever for a
// connection another holds).
func TestProximityScoredAsideRanksAsInTheSearchTransaction(t *testing.T) {
	ctx := t.Context()
	s := openFile(t, filepath.Join(t.TempDir(), "chatpipe.db"))
	defer s.Close()
	if cap(s.db.PairedReads) == 0 {
		t.Fatal("a store on a file has no slot to score pairs aside")
	}
	corpus := knowledgetest.NewScaleCorpus(40, 10)
	if err := corpus.Load(ctx, s, knowledge.DefaultTenant, nil); err != nil {
		t.Fatal(err)
	}
	queries := corpus.Queries[:60]
	search := func(tenants []string) [][]knowledge.Hit {
		t.Helper()
		out := make([][]knowledge.Hit, len(queries))
		for i, q := range queries {
			hits, err := s.KeywordSearch(ctx, tenants, q, 20)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = hits
		}
		return out
	}
	inline := func(tenants []string) [][]knowledge.Hit {
		t.Helper()
		for range cap(s.db.PairedReads) {
			s.db.PairedReads <- struct{}{}
		}
		defer func() {
			for range cap(s.db.PairedReads) {
				<-s.db.PairedReads
			}
		}()
		return search(tenants)
	}

	mine := []string{knowledge.DefaultTenant}
	want := inline(mine)
	reordered, found := 0, 0
	for i, hits := range want {
		if len(hits) > 0 {
			found++
		}
		for j := 1; j < len(hits); j++ {
			if hits[j].Score > hits[j-1].Score {
				t.Fatalf("query %q: hits not best first: %v then %v", queries[i], hits[j-1].Score, hits[j].Score)
			}
		}
		if pairsChangeTheOrder(t, s, queries[i], hits) {
			reordered++
		}
		if knowledge.QueryProximities(queries[i]) == nil {
			continue
		}
		if one := rankInOneStatement(t, s, queries[i], 20); !reflect.DeepEqual(hits, one) {
			t.Fatalf("query %q: hits differ from the ranking in one statement:\n%+v\n%+v", queries[i], hits, one)
		}
	}
	if found < len(queries)/2 || reordered == 0 {
		t.Fatalf("%d of %d queries found chunks, %d reordered by their pairs: the comparison would prove little", found, len(queries), reordered)
	}
	t.Logf("%d of %d queries found chunks, %d reordered by their pairs", found, len(queries), reordered)
	if got := search(mine); !reflect.DeepEqual(got, want) {
		t.Fatal("scored aside, the hits differ from those scored in the search's transaction")
	}

	// Many searches at once, more than there are readers.
	searchers := 4 * s.reader.Stats().MaxOpenConnections
	var wg sync.WaitGroup
	errs := make(chan error, searchers)
	deadline, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for g := range searchers {
		wg.Go(func() {
			for i := g % 4; i < len(queries); i += 4 {
				hits, err := s.KeywordSearch(deadline, mine, queries[i], 20)
				if err == nil && !reflect.DeepEqual(hits, want[i]) {
					t.Errorf("query %q, searched with others at once: hits differ", queries[i])
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("searches at once: %v", err)
	}

	// Another tenant's documents turn the tenant filter on.
	if err := knowledgetest.NewScaleCorpus(5, 10).Load(ctx, s, "another", nil); err != nil {
		t.Fatal(err)
	}
	filtered := inline(mine)
	if got := search(mine); !reflect.DeepEqual(got, filtered) {
		t.Fatal("with the tenant filter, the hits scored aside differ from those scored in the search's transaction")
	}
	for _, hits := range filtered {
		for _, h := range hits {
			if !strings.HasPrefix(h.DocumentID, knowledge.DefaultTenant+"-") {
				t.Fatalf("hit %s of another tenant", h.ChunkID)
			}
		}
	}
}

// pairsChangeTheOrder reports whether the query's hits, with their
// proximity bonus, are in another order than its terms alone rank them.
func pairsChangeTheOrder(t *testing.T, s *Store, query string, hits []knowledge.Hit) bool {
	t.Helper()
	plain, err := s.KeywordSearchTerms(t.Context(), []string{knowledge.DefaultTenant}, knowledge.QueryTerms(query), len(hits))
	if err != nil {
		t.Fatal(err)
	}
	for i := range min(len(plain), len(hits)) {
		if plain[i].ChunkID != hits[i].ChunkID {
			return true
		}
	}
	return false
}
