package knowledge_test

import (
	"context"
	"reflect"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/retrieval"
)

// oneRankingAtATime is a store as PostgreSQL's is to the service: no
// SnapshotSearcher (and no TitleSearcher), so each ranking of a search
// is one call. It counts the calls for terms (the bridge's and the
// expansion's rankings).
type oneRankingAtATime struct {
	knowledge.Store
	termCalls int
}

func (s *oneRankingAtATime) KeywordSearchTerms(ctx context.Context, tenantIDs, terms []string, limit int) ([]knowledge.Hit, error) {
	s.termCalls++
	return s.Store.KeywordSearchTerms(ctx, tenantIDs, terms, limit)
}

// A search ranks the same whether the store runs its rankings in one
// read (SQLite's KeywordSearches) or the service calls it once per
// ranking, for an English question (one ranking) and for Chinese ones
// (with their English bridge and expansion).
func TestASearchRanksTheSameInOneReadAndOneCallPerRanking(t *testing.T) {
	store := openStore(t)
	snapshot := knowledge.NewService(store, nil, testConfig(), nil)
	t.Cleanup(func() { _ = snapshot.Close() })
	for _, doc := range []string{
		"# chmod\n\nchmod - change file mode bits\n\nchmod changes the permissions of each given file.",
		"# chmod (中文)\n\nchmod - 改变文件的访问权限\n\n修改文件的读、写和执行权限。",
		"# gzip\n\ngzip - compress or expand files\n\nReduces the size of the named files.",
		"# tar\n\ntar - 打包和解包归档文件\n\n把多个文件合成一个档案文件，也可以压缩。",
	} {
		if _, err := snapshot.Ingest(t.Context(), knowledge.IngestRequest{Content: doc}); err != nil {
			t.Fatal(err)
		}
	}
	plainStore := &oneRankingAtATime{Store: store}
	plain := knowledge.NewService(plainStore, nil, testConfig(), nil)
	for _, q := range []string{"how do I change a file's permissions", "怎么修改文件权限", "压缩文件"} {
		before := plainStore.termCalls
		want, err := plain.Search(t.Context(), retrieval.SearchRequest{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		got, err := snapshot.Search(t.Context(), retrieval.SearchRequest{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Hits) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: in one read %+v;\none call per ranking %+v", q, got, want)
		}
		if q != "how do I change a file's permissions" && plainStore.termCalls == before {
			t.Errorf("%q made no ranking besides the question's: the test does not compare what it should", q)
		}
	}
}

// A lead or name weight set for a store with no title search is warned
// of, at start and on a reload that changes it (not again on one that
// keeps it); on SQLite, which has one, it is not.
func TestATitleWeightTheStoreCannotUseIsWarnedOf(t *testing.T) {
	store := openStore(t)
	opts := testConfig()
	opts.Search.LeadWeight = 0.3
	opts.Search.NameWeight = 2
	core, logs := observer.New(zap.WarnLevel)
	sqlite := knowledge.NewService(store, nil, opts, zap.New(core))
	t.Cleanup(func() { _ = sqlite.Close() }) // closes the store both services use
	if n := logs.Len(); n != 0 {
		t.Fatalf("SQLite has a title search, yet %d warnings", n)
	}
	plain := knowledge.NewService(&oneRankingAtATime{Store: store}, nil, opts, zap.New(core))
	plain.Reconfigure(testConfig())
	plain.Reconfigure(opts)
	plain.Reconfigure(opts) // another setting changed, say
	for _, key := range []string{"lead_weight", "name_weight"} {
		if n := logs.FilterMessageSnippet(key + " is ignored").Len(); n != 2 {
			t.Errorf("%d warnings of %s for a store with no title search, want 2 (at start and on the reload that set it)", n, key)
		}
	}
}
