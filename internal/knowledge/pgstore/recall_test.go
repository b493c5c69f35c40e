package pgstore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/knowledge/synonyms"
	"github.com/chatpipe/chatpipe/internal/pgdb/pgdbtest"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/internal/samples"
)

// defaultOptions are the knowledge options config.yaml's defaults map to
// (internal/app, which this package's tests cannot import).
var defaultOptions = func() knowledge.Options {
	groups, err := knowledge.NewSynonymGroups(synonyms.Builtin())
	if err != nil {
		panic(err) // the built-in groups compile: a knowledge test holds it
	}
	return knowledge.Options{
		MaxUploadBytes: 2 << 20,
		MaxFileBytes:   50 << 20,
		Chunking:       knowledge.Chunker{TargetTokens: 300, OverlapTokens: 40},
		EmbedBatchSize: 32,
		Search: knowledge.SearchOptions{TopK: 20, KeywordWeight: 1, VectorWeight: 0.04, RRFK: 5,
			NameWeight: 2, Synonyms: groups, SynonymWeight: 0.5},
	}
}()

// TestKeywordRecallOnTheSamplesIsNearSQLites: ts_rank is not bm25, so
// the ranking differs; over the sample knowledge base and its labelled
// questions, keyword recall@3 must still meet the bar the samples set for
// SQLite (0.8) and not fall far below SQLite's.
func TestKeywordRecallOnTheSamplesIsNearSQLites(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../samples/questions.json")
	if err != nil {
		t.Fatal(err)
	}
	var questions []struct {
		Q    string   `json:"q"`
		Docs []string `json:"docs"` // sample file names; any counts
	}
	if err := json.Unmarshal(data, &questions); err != nil {
		t.Fatal(err)
	}
	lite, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "chatpipe.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })

	recall := map[string]float64{}
	for name, store := range map[string]knowledge.Store{"postgres": openSchema(t, pgdbtest.NewSchema(t)), "sqlite": lite} {
		ctx := context.Background()
		svc := knowledge.NewService(store, nil, defaultOptions, nil)
		if _, err := svc.LoadSamples(ctx, samples.FS); err != nil {
			t.Fatalf("%s: LoadSamples: %v", name, err)
		}
		docs, _, err := svc.Documents(ctx, knowledge.DefaultTenant, 1000, 0)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]string{} // document id -> sample file name
		for _, d := range docs {
			files[d.ID] = d.Source
		}
		found := 0
		for _, q := range questions {
			resp, err := svc.Search(ctx, retrieval.SearchRequest{Query: q.Q})
			if err != nil || resp.Method != knowledge.MethodKeyword {
				t.Fatalf("%s: Search(%q) = method %q, %v", name, q.Q, resp.Method, err)
			}
			for _, h := range resp.Hits[:min(3, len(resp.Hits))] {
				if slices.Contains(q.Docs, files[h.DocumentID]) {
					found++
					break
				}
			}
		}
		recall[name] = float64(found) / float64(len(questions))
	}
	t.Logf("keyword recall@3 over %d questions: postgres %.3f, sqlite %.3f", len(questions), recall["postgres"], recall["sqlite"])
	if recall["postgres"] < 0.8 || recall["postgres"] < recall["sqlite"]-0.05 {
		t.Errorf("postgres keyword recall@3 = %.3f, want at least 0.8 and within 0.05 of sqlite's %.3f", recall["postgres"], recall["sqlite"])
	}
}
