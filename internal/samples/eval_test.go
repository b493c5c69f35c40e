package samples_test

// Retrieval over the sample knowledge base, measured with the labelled
// questions of questions.json. To see the figures:
//
//	go test -run TestRecall -v ./internal/samples/

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/embedding"
	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/knowledge/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/internal/samples"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recallK is the cut-off of the measure: a question counts as found when
// one of the first recallK passages belongs to a document that answers it.
const recallK = 3

// embedDims is the size of the fake embeddings: large enough that
// unrelated terms rarely share a bucket.
const embedDims = 256

// question is one entry of questions.json.
type question struct {
	Q    string   `json:"q"`
	Lang string   `json:"lang"` // en | zh
	Kind string   `json:"kind"` // direct | paraphrase (not the documents' words) | cross (answered only in the other language)
	Docs []string `json:"docs"` // the sample files that answer it; the first is the best answer
}

func loadQuestions(t *testing.T) []question {
	t.Helper()
	data, err := os.ReadFile("questions.json")
	if err != nil {
		t.Fatal(err)
	}
	var qs []question
	if err := json.Unmarshal(data, &qs); err != nil {
		t.Fatalf("questions.json: %v", err)
	}
	return qs
}

// sampleKB is a knowledge service with the samples loaded, and the file
// name of each of its documents.
type sampleKB struct {
	svc   *knowledge.Service
	files map[string]string // document id -> sample file name
	docs  []knowledge.Document
}

// openSampleKB builds a real knowledge service (SQLite in a temporary
// file) and loads the samples into it, as chatpipe does on first start.
// embedded adds vector search through the real /v1/embeddings client,
// talking to a fake endpoint that embeds with knowledgetest.HashEmbedder.
func openSampleKB(t *testing.T, embedded bool) sampleKB {
	t.Helper()
	ctx := t.Context()
	cfg, err := app.KnowledgeOptions(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	var emb embedding.Embedder
	if embedded {
		srv := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: embedDims})
		cfg.EmbedBatchSize = 32
		var err error
		if emb, err = knowledge.NewEmbedder(knowledge.EmbeddingOptions{Provider: "openai", BaseURL: srv.BaseURL(),
			Model: "hash-embed", Timeout: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "chatpipe.db"))
	if err != nil {
		t.Fatal(err)
	}
	svc := knowledge.NewService(store, emb, cfg, nil)
	t.Cleanup(func() {
		if err := svc.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	n, err := svc.LoadSamples(ctx, samples.FS)
	if err != nil {
		t.Fatalf("LoadSamples: %v", err)
	}
	docs, total, err := svc.Documents(ctx, knowledge.DefaultTenant, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != n || len(docs) != n {
		t.Fatalf("LoadSamples added %d documents; the store lists %d of %d", n, len(docs), total)
	}
	kb := sampleKB{svc: svc, files: map[string]string{}, docs: docs}
	for _, d := range docs {
		kb.files[d.ID] = d.Source // LoadSamples records the file's path as the source
		if embedded && !d.Embedded {
			t.Fatalf("%s was stored without embeddings", d.Source)
		}
	}
	return kb
}

// recall is recall@k over qs for searches shaped like base: the share of
// questions with a passage of one of their documents among the first k
// hits. strict counts only the first (best) document of each question.
type recall struct {
	any, strict float64
	misses      []string
}

func measure(ctx context.Context, t *testing.T, kb sampleKB, base retrieval.SearchRequest, method string, qs []question, k int) recall {
	t.Helper()
	var found, foundStrict int
	var r recall
	for _, q := range qs {
		req := base
		req.Query = q.Q
		resp, err := kb.svc.Search(ctx, req)
		if err != nil {
			t.Fatalf("Search(%q): %v", q.Q, err)
		}
		if resp.Method != method || resp.Degraded != "" {
			t.Fatalf("Search(%q) ran %q (degraded: %q), want %q", q.Q, resp.Method, resp.Degraded, method)
		}
		var got []string
		for _, h := range resp.Hits[:min(k, len(resp.Hits))] {
			got = append(got, kb.files[h.DocumentID])
		}
		hit := slices.ContainsFunc(got, func(f string) bool { return slices.Contains(q.Docs, f) })
		if hit {
			found++
		} else {
			r.misses = append(r.misses, fmt.Sprintf("%s %q: want %v, got %v", q.Kind, q.Q, q.Docs, got))
		}
		if slices.Contains(got, q.Docs[0]) {
			foundStrict++
		}
	}
	r.any = float64(found) / float64(len(qs))
	r.strict = float64(foundStrict) / float64(len(qs))
	return r
}

// TestRecallAt3OfKeywordVectorAndHybridSearch measures recall@3 of the
// three retrieval methods over the labelled questions. Keyword search is
// what a fresh `go run .` has (no embedding endpoint), so it must find
// most answers on its own; hybrid must be at least as good as keyword
// alone (what the issue asks of fusion; the fusion weights are tuned on
// the third-party set of internal/knowledge/eval, where the test
// embedder's vector ranking is weaker than keyword, so on these 50
// questions, written next to the documents, vector alone may edge ahead).
func TestRecallAt3OfKeywordVectorAndHybridSearch(t *testing.T) {
	qs := loadQuestions(t)
	ctx := t.Context()
	plain := openSampleKB(t, false)
	embedded := openSampleKB(t, true)

	// The weights as the search plugin sends them by default: 0 takes
	// knowledge.search; -1 leaves a ranking out (see knowledge.Service.Search).
	keyword := measure(ctx, t, plain, retrieval.SearchRequest{}, knowledge.MethodKeyword, qs, recallK)
	keywordToo := measure(ctx, t, embedded, retrieval.SearchRequest{VectorWeight: -1}, knowledge.MethodKeyword, qs, recallK)
	vector := measure(ctx, t, embedded, retrieval.SearchRequest{KeywordWeight: -1}, knowledge.MethodVector, qs, recallK)
	hybrid := measure(ctx, t, embedded, retrieval.SearchRequest{}, knowledge.MethodHybrid, qs, recallK)

	for _, m := range []struct {
		name string
		r    recall
	}{{"keyword", keyword}, {"vector", vector}, {"hybrid", hybrid}} {
		t.Logf("recall@%d %-7s = %.3f (best document only: %.3f) over %d questions", recallK, m.name, m.r.any, m.r.strict, len(qs))
		for _, miss := range m.r.misses {
			t.Logf("  %s miss: %s", m.name, miss)
		}
	}
	if keywordToo.any != keyword.any {
		t.Errorf("keyword-only search differs with embeddings configured: %.3f vs %.3f", keywordToo.any, keyword.any)
	}
	if keyword.any < 0.8 {
		t.Errorf("keyword recall@%d = %.3f, want at least 0.8", recallK, keyword.any)
	}
	if hybrid.any < keyword.any {
		t.Errorf("hybrid recall@%d = %.3f is worse than keyword alone (%.3f)", recallK, hybrid.any, keyword.any)
	}
}
