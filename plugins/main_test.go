package plugins_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/internal/terms"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ragPlugins is the default rag pipeline.
var ragPlugins = []any{"load_history", "rewrite", "search", "rerank", "merge", "chat_completion_stream"}

// sections returns the built-in plugin sections with overrides laid over
// them key by key, as config.yaml's plugins section would be.
func sections(overrides map[string]map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for name, sec := range config.Default().Plugins {
		out[name] = maps.Clone(sec)
	}
	for name, sec := range overrides {
		if out[name] == nil {
			out[name] = map[string]any{}
		}
		maps.Copy(out[name], sec)
	}
	return out
}

// ragChain builds the default rag chain with the given setting overrides.
func ragChain(t *testing.T, overrides map[string]map[string]any) *pipeline.EventManager {
	t.Helper()
	return pipelinetest.Chain(t, "rag", ragPlugins, sections(overrides))
}

// fakeKnowledge is an in-memory knowledge base: a fixed answer (hits or
// err), or with docs set, a keyword search ranking chunks by shared terms.
// It records the requests it got.
type fakeKnowledge struct {
	hits     []retrieval.SearchHit
	docs     []retrieval.SearchHit
	err      error
	method   string
	degraded string

	mu   sync.Mutex
	reqs []retrieval.SearchRequest
}

func (k *fakeKnowledge) Search(_ context.Context, req retrieval.SearchRequest) (retrieval.SearchResponse, error) {
	k.mu.Lock()
	k.reqs = append(k.reqs, req)
	k.mu.Unlock()
	if k.err != nil {
		return retrieval.SearchResponse{}, k.err
	}
	method := k.method
	if method == "" {
		method = "keyword"
	}
	if k.docs == nil {
		return retrieval.SearchResponse{Hits: slices.Clone(k.hits), Method: method, Degraded: k.degraded}, nil
	}
	q := terms.NewSet(req.Query)
	type scored struct {
		hit   retrieval.SearchHit
		score int
	}
	var found []scored
	for _, d := range k.docs {
		n := 0
		for t := range terms.NewSet(d.Title + " " + d.Content) {
			if _, ok := q[t]; ok {
				n++
			}
		}
		if n > 0 {
			found = append(found, scored{d, n})
		}
	}
	slices.SortStableFunc(found, func(a, b scored) int { return b.score - a.score })
	resp := retrieval.SearchResponse{Method: method}
	for i, f := range found {
		f.hit.Score = 1 / float64(60+i+1)
		f.hit.KeywordRank = i + 1
		resp.Hits = append(resp.Hits, f.hit)
	}
	return resp, nil
}

// Version implements retrieval.Knowledge: the fake never changes.
func (k *fakeKnowledge) Version(context.Context) (int64, error) { return 0, nil }

// queries returns the queries searched so far.
func (k *fakeKnowledge) queries() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, r := range k.reqs {
		out = append(out, r.Query)
	}
	return out
}

// sampleDocs is a small knowledge base about chatpipe, in English and Chinese.
var sampleDocs = []retrieval.SearchHit{
	{ChunkID: "run-0", DocumentID: "run", Title: "Running chatpipe", Heading: "Quick start", ChunkIndex: 0,
		Content: "Run chatpipe with go run . in the repository root. It listens on 127.0.0.1:8080 and answers " +
			"with the offline demo model until you configure a real one."},
	{ChunkID: "run-1", DocumentID: "run", Title: "Running chatpipe", Heading: "Configuration", ChunkIndex: 1,
		Content: "The configuration lives in config.yaml. Every key can be overridden with a CHATPIPE_ environment variable."},
	{ChunkID: "resume-0", DocumentID: "resume", Title: "Resuming a stream", ChunkIndex: 0,
		Content: "Every event carries a sequence number. To resume a stream after a dropped connection, reconnect " +
			"with the Last-Event-ID header or the after query parameter. The server replays the missed events " +
			"and then continues live."},
	{ChunkID: "plugin-0", DocumentID: "plugin", Title: "Writing a plugin", ChunkIndex: 0,
		Content: "A plugin implements Name, Events and OnEvent. It registers itself in init with pipeline.Register " +
			"and is enabled by listing its name in config.yaml."},
	{ChunkID: "resume-zh-0", DocumentID: "resume-zh", Title: "流的恢复", ChunkIndex: 0,
		Content: "每个事件都带有序号。网络断开后，客户端使用 Last-Event-ID 请求头重新连接，即可恢复流。" +
			"服务器会先重放错过的事件，然后继续实时推送。"},
}

// hitsOf returns the sample chunks with the given ids, in that order, with
// fused scores falling by rank.
func hitsOf(ids ...string) []retrieval.SearchHit {
	var out []retrieval.SearchHit
	for i, id := range ids {
		for _, d := range sampleDocs {
			if d.ChunkID == id {
				d.Score = 1 / float64(60+i+1)
				out = append(out, d)
			}
		}
	}
	return out
}

// chunkIDs lists the chunk ids of references.
func chunkIDs(res *pipelinetest.Result) []string {
	refs, _ := res.References()
	var out []string
	for _, r := range refs {
		out = append(out, r.ChunkID)
	}
	return out
}

// lastUserMessage returns the content of the last message of a recorded
// provider request.
func lastUserMessage(t *testing.T, body map[string]any) string {
	t.Helper()
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		t.Fatalf("request without messages: %v", body)
	}
	last, _ := msgs[len(msgs)-1].(map[string]any)
	s, _ := last["content"].(string)
	return s
}
