package plugins_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
)

// fusedIDs are the candidates every rerank test starts from, in fused order.
var fusedIDs = []string{"resume-0", "run-0", "plugin-0"}

// rerankRun runs search → rerank → merge → answer with the given rerank
// settings over the fused candidates.
func rerankRun(t *testing.T, settings map[string]any, models pipelinetest.Models) *pipelinetest.Result {
	t.Helper()
	chain := pipelinetest.Chain(t, "rag", []any{"search", "rerank", "merge", "chat_completion_stream"},
		sections(map[string]map[string]any{"rerank": settings}))
	res := pipelinetest.Run(context.Background(), chain, pipelinetest.Request{
		Query: "How do I resume a stream?", Models: models, Knowledge: &fakeKnowledge{hits: hitsOf(fusedIDs...)},
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return res
}

// rerankServer is a fake /rerank API answering with fixed scores per
// document index; it records the requests it got.
type rerankServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []map[string]any
	auth []string
}

func newRerankServer(t *testing.T, status int, scores map[int]float64) *rerankServer {
	s := &rerankServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		s.reqs = append(s.reqs, body)
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		if r.URL.Path != "/v1/rerank" {
			http.NotFound(w, r)
			return
		}
		if status != http.StatusOK {
			http.Error(w, `{"detail":"overloaded"}`, status)
			return
		}
		var results []map[string]any
		for i, sc := range scores {
			results = append(results, map[string]any{"index": i, "relevance_score": sc})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"results": results})
	}))
	t.Cleanup(s.Close)
	return s
}

func remoteSettings(baseURL string) map[string]any {
	return map[string]any{"reranker": "remote", "remote_base_url": baseURL + "/v1", "remote_model": "jina-reranker-v2",
		"remote_api_key": "rk-secret", "timeout": "2s"}
}

func TestRemoteRerankerOrdersByRelevanceAndDropsBelowThreshold(t *testing.T) {
	t.Parallel()
	srv := newRerankServer(t, http.StatusOK, map[int]float64{0: 0.35, 1: 0.92, 2: 0.05})
	res := rerankRun(t, remoteSettings(srv.URL), pipelinetest.Models{"default": pipelinetest.Demo()})

	if got, want := chunkIDs(res), []string{"run-0", "resume-0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("references = %v, want %v (by relevance, plugin-0 under the threshold)", got, want)
	}
	refs, _ := res.References()
	if refs[0].Score != 0.92 {
		t.Errorf("reference score = %v, want the reranker's 0.92", refs[0].Score)
	}
	req := srv.reqs[0]
	if req["model"] != "jina-reranker-v2" || req["query"] != "How do I resume a stream?" || req["top_n"] != 3.0 {
		t.Errorf("request = %v", req)
	}
	if docs, _ := req["documents"].([]any); len(docs) != 3 || !strings.HasPrefix(docs[0].(string), "Resuming a stream\n") {
		t.Errorf("documents = %v", req["documents"])
	}
	if srv.auth[0] != "Bearer rk-secret" {
		t.Errorf("Authorization = %q", srv.auth[0])
	}
	if st, _ := res.Stage("rerank"); !strings.HasPrefix(st.Detail, "remote: kept 2 of 3") {
		t.Errorf("rerank detail = %q", st.Detail)
	}
}

func TestRemoteRerankerKeepsTheBestWhenNothingPassesTheThreshold(t *testing.T) {
	t.Parallel()
	srv := newRerankServer(t, http.StatusOK, map[int]float64{0: 0.01, 1: 0.03, 2: 0.02})
	res := rerankRun(t, remoteSettings(srv.URL), pipelinetest.Models{"default": pipelinetest.Demo()})
	if got, want := chunkIDs(res), []string{"run-0", "plugin-0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("references = %v, want the best min_keep (2) %v", got, want)
	}
	if st, _ := res.Stage("rerank"); !strings.Contains(st.Detail, "no candidate reached the threshold; kept the best 2") {
		t.Errorf("rerank detail = %q", st.Detail)
	}
}

func TestRemoteRerankerDownKeepsTheFusedOrder(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // nothing listens there any more
	cases := []struct {
		name, url, wantDetail string
	}{
		{"http 503", newRerankServer(t, http.StatusServiceUnavailable, nil).URL, "returned HTTP 503"},
		{"garbage", newRerankServer(t, http.StatusOK, nil).URL, "no usable scores"},
		{"unreachable", down.URL, "is unreachable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := rerankRun(t, remoteSettings(tc.url), pipelinetest.Models{"default": pipelinetest.Demo()})
			if got := chunkIDs(res); !reflect.DeepEqual(got, fusedIDs) {
				t.Errorf("references = %v, want the fused order %v", got, fusedIDs)
			}
			st, _ := res.Stage("rerank")
			if !strings.Contains(st.Detail, tc.wantDetail) || !strings.Contains(st.Detail, "kept the fused order") ||
				strings.Contains(st.Detail, "rk-secret") {
				t.Errorf("rerank detail = %q", st.Detail)
			}
			if res.Answer() == "" {
				t.Error("empty answer")
			}
		})
	}
}

func TestLLMRerankerGradesTheCandidates(t *testing.T) {
	t.Parallel()
	provider := providertest.New(t)
	provider.Enqueue(providertest.Script{Chunks: providertest.Answer("<think>grading</think>```json\n[3, 9, 0]\n```", 4)})
	res := rerankRun(t, map[string]any{"reranker": "llm"}, pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())})
	if got, want := chunkIDs(res), []string{"run-0", "resume-0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("references = %v, want %v", got, want)
	}
	prompt := lastUserMessage(t, provider.Requests()[0].Body)
	if !strings.Contains(prompt, "[1] Resuming a stream\n") || !strings.Contains(prompt, "[3] Writing a plugin\n") {
		t.Errorf("grading prompt lacks the numbered passages:\n%s", prompt)
	}
}

func TestLLMRerankerGarbageKeepsTheFusedOrder(t *testing.T) {
	t.Parallel()
	for _, reply := range []string{
		"All of these passages look quite relevant to me.",
		"[1, 2]  are good", // prose around a list of indices: not a reading we trust
		`{"scores": "high"}`,
	} {
		provider := providertest.New(t)
		provider.Enqueue(providertest.Script{Chunks: providertest.Answer(reply, 3)})
		res := rerankRun(t, map[string]any{"reranker": "llm"}, pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())})
		if got := chunkIDs(res); !reflect.DeepEqual(got, fusedIDs) {
			t.Errorf("reply %q: references = %v, want the fused order", reply, got)
		}
		if st, _ := res.Stage("rerank"); !strings.Contains(st.Detail, "could not read grades") ||
			!strings.Contains(st.Detail, "kept the fused order") {
			t.Errorf("reply %q: rerank detail = %q", reply, st.Detail)
		}
	}
}

func TestLLMRerankerModelErrorKeepsTheFusedOrder(t *testing.T) {
	t.Parallel()
	provider := providertest.New(t)
	provider.Enqueue(providertest.Script{Status: 502})
	res := rerankRun(t, map[string]any{"reranker": "llm"}, pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())})
	if got := chunkIDs(res); !reflect.DeepEqual(got, fusedIDs) {
		t.Errorf("references = %v, want the fused order", got)
	}
	if st, _ := res.Stage("rerank"); !strings.Contains(st.Detail, "failed; kept the fused order") {
		t.Errorf("rerank detail = %q", st.Detail)
	}
}
