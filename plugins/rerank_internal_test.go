package plugins

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/chatpipe/chatpipe/internal/retrieval"
)

func scoreRerank(threshold, lambda float64, topK, minKeep int) *Rerank {
	return &Rerank{cfg: RerankConfig{Reranker: "score", TopK: topK, Threshold: threshold, MinKeep: minKeep, Lambda: lambda},
		scorer: fusedScorer{}}
}

func ids(hits []retrieval.SearchHit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ChunkID)
	}
	return out
}

func TestScoreRerankerThresholdIsRelativeToTheBestCandidate(t *testing.T) {
	t.Parallel()
	hits := []retrieval.SearchHit{
		{ChunkID: "a", Content: "resume a stream with last event id", Score: 0.032},
		{ChunkID: "b", Content: "configure plugins in yaml", Score: 0.020},
		{ChunkID: "c", Content: "write a plugin in go", Score: 0.008},
	}
	scores, _ := fusedScorer{}.score(context.Background(), nil, hits)
	if want := []float64{1, 0.625, 0.25}; !reflect.DeepEqual(scores, want) {
		t.Fatalf("normalised scores = %v, want %v", scores, want)
	}
	got, note := scoreRerank(0.5, 1, 6, 1).selectHits(hits, scores)
	if !reflect.DeepEqual(ids(got), []string{"a", "b"}) || note != "" {
		t.Errorf("kept %v (%q), want a and b over the threshold 0.5", ids(got), note)
	}
	if got[1].Score != 0.625 {
		t.Errorf("kept hit carries score %v, want the normalised 0.625", got[1].Score)
	}
}

func TestScoreRerankerKeepsMinKeepWhenNothingPasses(t *testing.T) {
	t.Parallel()
	hits := []retrieval.SearchHit{{ChunkID: "a"}, {ChunkID: "b"}, {ChunkID: "c"}}
	scores := []float64{0.1, 0.3, 0.2}
	got, note := scoreRerank(0.9, 1, 6, 2).selectHits(hits, scores)
	if !reflect.DeepEqual(ids(got), []string{"b", "c"}) || note == "" {
		t.Errorf("kept %v (%q), want the best two b, c and a note", ids(got), note)
	}
	got, _ = scoreRerank(0.9, 1, 6, 0).selectHits(hits, scores)
	if len(got) != 0 {
		t.Errorf("min_keep 0 kept %v", ids(got))
	}
}

func TestScoreRerankerPrefersDiversePassages(t *testing.T) {
	t.Parallel()
	hits := []retrieval.SearchHit{
		{ChunkID: "resume", Content: "To resume a stream reconnect with the Last-Event-ID header after a drop.", Score: 1},
		{ChunkID: "resume-copy", Content: "To resume a stream reconnect with the Last-Event-ID header after a network drop.", Score: 0.98},
		{ChunkID: "stop", Content: "Stop a generation with POST stop; the partial answer is saved.", Score: 0.9},
	}
	scores := []float64{1, 0.98, 0.9}
	got, _ := scoreRerank(0, 0.7, 2, 1).selectHits(hits, scores)
	if want := []string{"resume", "stop"}; !reflect.DeepEqual(ids(got), want) {
		t.Errorf("MMR picked %v, want %v (the near copy adds nothing)", ids(got), want)
	}
	got, _ = scoreRerank(0, 1, 2, 1).selectHits(hits, scores)
	if want := []string{"resume", "resume-copy"}; !reflect.DeepEqual(ids(got), want) {
		t.Errorf("lambda 1 picked %v, want relevance order %v", ids(got), want)
	}
}

func TestParseLLMScores(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, reply string
		want        []float64 // nil: unreadable
	}{
		{"bare array", "[8, 2, 10]", []float64{0.8, 0.2, 1}},
		{"code fence after thinking", "<think>let me see [1]</think>\n```json\n[0, 5, 7]\n```", []float64{0, 0.5, 0.7}},
		{"prose then array", "Here are the grades: [1, 2, 3].", []float64{0.1, 0.2, 0.3}},
		{"clamped", "[-3, 12, 5]", []float64{0, 1, 0.5}},
		{"objects", `[{"index": 2, "score": 9}, {"index": 1, "score": 4}]`, []float64{0.4, 0.9, -1}},
		{"scores key", `{"scores": [1, 1, 1]}`, []float64{0.1, 0.1, 0.1}},
		{"bare ranking", "[3, 1]", []float64{0.75, -1, 1}},
		{"ranking in prose", "Passages [3, 1] matter.", nil},
		{"wrong count", "Grades: [1, 2, 3, 4, 5]", nil},
		{"no json", "They are all relevant.", nil},
		{"strings", `["high", "low", "low"]`, nil},
	} {
		got, ok := parseLLMScores(tc.reply, 3)
		if tc.want == nil {
			if ok {
				t.Errorf("%s: read %v from an unreadable reply", tc.name, got)
			}
			continue
		}
		if !ok || !approxEqual(got, tc.want) {
			t.Errorf("%s: got %v (%v), want %v", tc.name, got, ok, tc.want)
		}
	}
}

func TestParseRerankResponse(t *testing.T) {
	t.Parallel()
	got, ok := parseRerankResponse([]byte(`{"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.2},
		{"index":7,"relevance_score":0.5},{"index":1,"relevance_score":0.1}]}`), 3)
	if !ok || !approxEqual(got, []float64{0.2, 0.9, -1}) {
		t.Errorf("results = %v %v", got, ok)
	}
	got, ok = parseRerankResponse([]byte(`{"data":[{"index":0,"score":2.0},{"index":1,"score":-2.0}]}`), 2)
	if !ok || !approxEqual(got, []float64{1 / (1 + math.Exp(-2)), 1 / (1 + math.Exp(2))}) {
		t.Errorf("logits = %v %v, want them through a sigmoid", got, ok)
	}
	if _, ok := parseRerankResponse([]byte(`{"results":[]}`), 2); ok {
		t.Error("an empty result list was accepted")
	}
}

func approxEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

// The search puts the best chunk of each of its first documents ahead of
// a first document's other chunks, so its order is not its score order;
// the score reranker keeps the search's order and cuts by each
// candidate's own score.
func TestScoreRerankerKeepsTheSearchOrderOverRawScores(t *testing.T) {
	t.Parallel()
	hits := []retrieval.SearchHit{
		{ChunkID: "manual-1", DocumentID: "manual", Score: 0.20},
		{ChunkID: "notes-1", DocumentID: "notes", Score: 0.10}, // moved up: the second document
		{ChunkID: "faq-1", DocumentID: "faq", Score: 0.02},     // moved up, below the threshold
		{ChunkID: "manual-2", DocumentID: "manual", Score: 0.18},
		{ChunkID: "manual-3", DocumentID: "manual", Score: 0.16},
	}
	scores, _ := fusedScorer{}.score(context.Background(), nil, hits)
	for _, tc := range []struct {
		lambda float64
		topK   int
		want   []string
	}{
		{1, 2, []string{"manual-1", "notes-1"}},
		{1, 6, []string{"manual-1", "notes-1", "manual-2", "manual-3"}},
		{0.7, 2, []string{"manual-1", "notes-1"}},
	} {
		got, _ := scoreRerank(0.2, tc.lambda, tc.topK, 1).selectHits(hits, scores)
		if !reflect.DeepEqual(ids(got), tc.want) {
			t.Errorf("lambda %v, top_k %d kept %v, want %v", tc.lambda, tc.topK, ids(got), tc.want)
		}
	}
}

// With MMR on, a document the search moved up is as relevant as the best
// passage behind it, and the passages behind it keep their differences:
// a weak passage does not beat a strong one for its little overlap.
func TestScoreRerankerMMRKeepsTheTailsDifferences(t *testing.T) {
	t.Parallel()
	hits := []retrieval.SearchHit{
		{ChunkID: "A1", Content: "kiln firing temperature cone ten", Score: 1},
		{ChunkID: "B1", Content: "celadon glaze dipping", Score: 0.30}, // moved up by the search
		{ChunkID: "A2", Content: "kiln firing temperature cone ten cooling", Score: 0.95},
		{ChunkID: "F1", Content: "clay storage buckets", Score: 0.22},
	}
	scores, _ := fusedScorer{}.score(context.Background(), nil, hits)
	got, _ := scoreRerank(0.2, 0.85, 3, 1).selectHits(hits, scores)
	if want := []string{"A1", "B1", "A2"}; !reflect.DeepEqual(ids(got), want) {
		t.Errorf("lambda 0.85 kept %v, want %v (A2 is far more relevant than F1)", ids(got), want)
	}
}
