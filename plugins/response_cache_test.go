package plugins_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
)

// cachedRAG is the rag pipeline with response_cache after load_history.
var cachedRAG = []any{"load_history", "response_cache", "rewrite", "search", "rerank", "merge", "chat_completion_stream"}

// cacheEnv is one cache, knowledge base and model shared by the runs of a test.
type cacheEnv struct {
	t     *testing.T
	chain *pipeline.EventManager
	cache *pipelinetest.Cache
	kb    *pipelinetest.Knowledge
	model *pipelinetest.Model
}

func newCacheEnv(t *testing.T, overrides map[string]map[string]any) *cacheEnv {
	t.Helper()
	model := pipelinetest.NewModel()
	model.SetDefault(pipelinetest.Script{Chunks: slices.Concat(
		pipelinetest.Reasoning("Resuming is described in passage one.", 2),
		pipelinetest.Answer("Reconnect with the Last-Event-ID header [1].", 4))})
	return &cacheEnv{
		t:     t,
		chain: pipelinetest.Chain(t, "rag", cachedRAG, sections(overrides)),
		cache: pipelinetest.NewCache(0),
		kb:    &pipelinetest.Knowledge{Hits: hitsOf("resume-0", "run-0")},
		model: model,
	}
}

func (e *cacheEnv) ask(tenant, question string) *pipelinetest.Result {
	e.t.Helper()
	return pipelinetest.Run(e.t.Context(), e.chain, pipelinetest.Request{
		TenantID: tenant, Query: question, Models: e.model, Knowledge: e.kb, Cache: e.cache,
	})
}

func cacheDetail(t *testing.T, res *pipelinetest.Result) string {
	t.Helper()
	st, ok := res.Stage("response_cache")
	if !ok {
		t.Fatalf("no response_cache stage: %v", res.Types())
	}
	return st.Detail
}

// A miss answers with the model and stores the answer; asking again (in
// other words' spacing and case) replays it as a normal stream without
// calling the model, saying "cache hit".
func TestResponseCacheMissThenHitReplaysWithoutTheModel(t *testing.T) {
	t.Parallel()
	e := newCacheEnv(t, nil)
	miss := e.ask("acme", "How do I resume a stream?")
	if miss.Err != nil || cacheDetail(t, miss) != "cache miss" || len(e.model.Calls()) != 1 {
		t.Fatalf("miss: err %v detail %q calls %d", miss.Err, cacheDetail(t, miss), len(e.model.Calls()))
	}
	if _, sets := e.cache.Counts(); sets != 1 {
		t.Fatalf("%d stores after a complete answer", sets)
	}
	hit := e.ask("acme", "  how do I   RESUME a stream ")
	if hit.Err != nil || cacheDetail(t, hit) != "cache hit" {
		t.Fatalf("hit: err %v detail %q", hit.Err, cacheDetail(t, hit))
	}
	if n := len(e.model.Calls()); n != 1 {
		t.Fatalf("the model was called on a hit (%d calls)", n)
	}
	if n := len(e.kb.Requests()); n != 1 {
		t.Fatalf("the knowledge base was searched on a hit (%d searches)", n)
	}
	if hit.Answer() != miss.Answer() || hit.Thinking() != miss.Thinking() || hit.Answer() == "" {
		t.Fatalf("replayed %q / %q, streamed %q / %q", hit.Answer(), hit.Thinking(), miss.Answer(), miss.Thinking())
	}
	missRefs, _ := miss.References()
	hitRefs, ok := hit.References()
	if !ok || len(hitRefs) == 0 || hitRefs[0].ChunkID != missRefs[0].ChunkID {
		t.Fatalf("references %+v, want %+v", hitRefs, missRefs)
	}
	// The replay is a stream of its own: new stream id, seqs from 1, the
	// answer's blocks whole, and no stage of the skipped plugins.
	if hit.State.MessageID == miss.State.MessageID || hit.Events[0].Seq != 1 || hit.Events[0].StreamID != hit.State.MessageID {
		t.Fatalf("replay stream %q seq %d", hit.Events[0].StreamID, hit.Events[0].Seq)
	}
	for _, typ := range []eventbus.Type{eventbus.TypeThinkingStart, eventbus.TypeThinkingEnd, eventbus.TypeAnswerStart,
		eventbus.TypeAnswerEnd, eventbus.TypeReferences, eventbus.TypeUsage} {
		if hit.Count(typ) != 1 {
			t.Fatalf("replay has %d %s events: %v", hit.Count(typ), typ, hit.Types())
		}
	}
	for _, stage := range []string{"search", "merge", "generate"} {
		if _, ok := hit.Stage(stage); ok {
			t.Fatalf("stage %s ran on a hit", stage)
		}
	}
}

// Entries expire after ttl.
func TestResponseCacheEntriesExpire(t *testing.T) {
	t.Parallel()
	e := newCacheEnv(t, map[string]map[string]any{"response_cache": {"ttl": "10m"}})
	e.ask("acme", "How do I resume a stream?")
	e.cache.Advance(9 * time.Minute)
	if res := e.ask("acme", "How do I resume a stream?"); cacheDetail(t, res) != "cache hit" {
		t.Fatalf("before the ttl: %q", cacheDetail(t, res))
	}
	e.cache.Advance(2 * time.Minute)
	if res := e.ask("acme", "How do I resume a stream?"); cacheDetail(t, res) != "cache miss" || len(e.model.Calls()) != 2 {
		t.Fatalf("after the ttl: %q, %d model calls", cacheDetail(t, res), len(e.model.Calls()))
	}
}

// Adding or deleting a document changes the knowledge base version, and
// with it every key.
func TestResponseCacheIsInvalidatedByADocumentChange(t *testing.T) {
	t.Parallel()
	e := newCacheEnv(t, nil)
	e.ask("acme", "How do I resume a stream?")
	e.kb.Change()
	e.kb.Hits = hitsOf("resume-zh-0")
	res := e.ask("acme", "How do I resume a stream?")
	if cacheDetail(t, res) != "cache miss" || len(e.model.Calls()) != 2 {
		t.Fatalf("after a document change: %q, %d model calls", cacheDetail(t, res), len(e.model.Calls()))
	}
	if refs := chunkIDs(res); len(refs) != 1 || refs[0] != "resume-zh-0" {
		t.Fatalf("answered from the old documents: %v", refs)
	}
}

// One tenant's answer is never served to another.
func TestResponseCacheNeverServesAnotherTenant(t *testing.T) {
	t.Parallel()
	e := newCacheEnv(t, nil)
	e.ask("acme", "How do I resume a stream?")
	res := e.ask("beta", "How do I resume a stream?")
	if cacheDetail(t, res) != "cache miss" || len(e.model.Calls()) != 2 {
		t.Fatalf("beta got %q, %d model calls", cacheDetail(t, res), len(e.model.Calls()))
	}
	if res := e.ask("beta", "How do I resume a stream?"); cacheDetail(t, res) != "cache hit" {
		t.Fatalf("beta's own answer: %q", cacheDetail(t, res))
	}
}

// A changed configuration of the mode (here the system prompt) is a
// different chain fingerprint and so a miss.
func TestResponseCacheKeysOnTheModesConfiguration(t *testing.T) {
	t.Parallel()
	e := newCacheEnv(t, nil)
	e.ask("acme", "How do I resume a stream?")
	e.chain = pipelinetest.Chain(t, "rag", cachedRAG, sections(map[string]map[string]any{
		"chat_completion_stream": {"system_prompt": "Answer like a pirate."}}))
	if res := e.ask("acme", "How do I resume a stream?"); cacheDetail(t, res) != "cache miss" {
		t.Fatalf("after a config change: %q", cacheDetail(t, res))
	}
}

// Answers that did not finish properly are never stored: stopped, failed
// mid-stream, failed before the first chunk, empty, or ended by a filter.
func TestResponseCacheNeverStoresUnfinishedAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script pipelinetest.Script
		chain  []any
		stop   bool
	}{
		{"stopped", pipelinetest.Script{Chunks: pipelinetest.Content("Partial answer that never", 4), HoldAfter: 2}, nil, true},
		{"failed mid-stream", pipelinetest.Script{Chunks: pipelinetest.Content("Partial", 2), Err: pipelinetest.ErrScripted}, nil, false},
		{"failed at once", pipelinetest.Script{StreamErr: pipelinetest.ErrScripted}, nil, false},
		{"empty", pipelinetest.Script{Chunks: []pipelinetest.Chunk{{FinishReason: "stop"}}}, nil, false},
		{"filtered", pipelinetest.Script{Chunks: pipelinetest.Answer("The launch code is 0000.", 4)},
			[]any{"load_history", "response_cache", "sensitive_filter", "chat_completion_stream"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newCacheEnv(t, map[string]map[string]any{"sensitive_filter": {"lists": []any{list("stop", "launch code")}}})
			if tc.chain != nil {
				e.chain = pipelinetest.Chain(t, "rag", tc.chain, sections(map[string]map[string]any{
					"sensitive_filter": {"lists": []any{list("stop", "launch code")}}}))
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.stop {
				gate := pipelinetest.NewGate()
				tc.script.Hold = gate
				go func() { <-gate.Reached(); cancel() }()
			}
			e.model.Enqueue(tc.script)
			res := pipelinetest.Run(ctx, e.chain, pipelinetest.Request{
				TenantID: "acme", Query: "Q?", Models: e.model, Knowledge: e.kb, Cache: e.cache})
			if res.Err == nil {
				t.Fatalf("the answer ended well: %q", res.Answer())
			}
			if _, sets := e.cache.Counts(); sets != 0 || e.cache.Len() != 0 {
				t.Fatalf("stored %d (%d held)", sets, e.cache.Len())
			}
		})
	}
}

// An answer larger than max_entry_bytes is answered but not stored.
func TestResponseCacheSkipsAnswersOverTheEntryBound(t *testing.T) {
	t.Parallel()
	e := newCacheEnv(t, map[string]map[string]any{"response_cache": {"max_entry_bytes": 512}})
	e.model.Enqueue(pipelinetest.Script{Chunks: pipelinetest.Answer(strings.Repeat("A long answer. ", 60), 30)})
	if res := e.ask("acme", "Q?"); res.Err != nil || len(res.Answer()) < 512 {
		t.Fatalf("err %v answer %d bytes", res.Err, len(res.Answer()))
	}
	if e.cache.Len() != 0 {
		t.Fatal("an answer over max_entry_bytes was stored")
	}
}

// Follow-up questions are not cached by default; with follow_ups on they
// are, keyed by the conversation before them.
func TestResponseCacheFollowUps(t *testing.T) {
	t.Parallel()
	chain := func(followUps bool) *pipeline.EventManager {
		return pipelinetest.Chain(t, "chat", []any{"load_history", "response_cache", "chat_completion_stream"},
			sections(map[string]map[string]any{"response_cache": {"follow_ups": followUps}}))
	}
	turns := func(answer string) []conversation.Message {
		return []conversation.Message{{Role: "user", Content: "Name a colour."}, {Role: "assistant", Content: answer}}
	}
	c := pipelinetest.NewCache(0)
	model := pipelinetest.NewModel()
	run := func(m *pipeline.EventManager, history []conversation.Message) string {
		res := pipelinetest.Run(t.Context(), m, pipelinetest.Request{Query: "And another?", History: history, Models: model, Cache: c})
		st, _ := res.Stage("response_cache")
		return st.Detail
	}
	if d := run(chain(false), turns("Red.")); d != "follow-up question; not cached" || c.Len() != 0 {
		t.Fatalf("follow_ups off: %q, %d stored", d, c.Len())
	}
	on := chain(true)
	for i, tc := range []struct {
		history []conversation.Message
		want    string
	}{
		{turns("Red."), "cache miss"},
		{turns("Red."), "cache hit"},
		{turns("Blue."), "cache miss"},
		{nil, "cache miss"},
	} {
		if d := run(on, tc.history); d != tc.want {
			t.Fatalf("run %d: %q, want %q", i, d, tc.want)
		}
	}
}

// A cache that fails is a miss: the question is still answered, and no
// store is attempted (it would wait for the broken cache again).
func TestResponseCacheFailingStoreIsAMiss(t *testing.T) {
	t.Parallel()
	model := pipelinetest.NewModel()
	c := &failingCache{}
	res := pipelinetest.Run(t.Context(), pipelinetest.Chain(t, "chat", []any{"response_cache", "chat_completion_stream"}, nil),
		pipelinetest.Request{Query: "Q?", Models: model, Cache: c})
	if res.Err != nil || res.Answer() == "" || cacheDetail(t, res) != "cache unavailable" {
		t.Fatalf("err %v answer %q detail %q", res.Err, res.Answer(), cacheDetail(t, res))
	}
	if c.sets.Load() != 0 {
		t.Fatal("stored into a cache that failed the lookup")
	}
}

type failingCache struct{ sets atomic.Int32 }

func (*failingCache) Get(context.Context, string) ([]byte, bool, error) {
	return nil, false, errors.New("connection refused")
}

func (c *failingCache) Set(context.Context, string, []byte, time.Duration) error {
	c.sets.Add(1)
	return errors.New("connection refused")
}

func TestResponseCacheConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		chain    []any
		settings map[string]any
		want     string
	}{
		{[]any{"response_cache", "load_history", "chat_completion_stream"}, nil, "response_cache must come after load_history"},
		{[]any{"response_cache", "chat_completion_stream"}, map[string]any{"ttl": "0s"}, "plugins.response_cache.ttl"},
		{[]any{"response_cache", "chat_completion_stream"}, map[string]any{"max_entry_bytes": 0}, "plugins.response_cache.max_entry_bytes"},
		{[]any{"response_cache", "chat_completion_stream"}, map[string]any{"size": 1}, "size"},
	} {
		_, err := pipelinetest.BuildChain("chat", tc.chain, sections(map[string]map[string]any{"response_cache": tc.settings}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: %v, want %q", tc.chain, tc.settings, err, tc.want)
		}
	}
}

// BenchmarkResponseCacheFirstAnswerDelta is the in-process time from the
// start of a chain [load_history, response_cache, search, rerank, merge,
// chat_completion_stream] to its first answer delta, on a miss (a new
// question each time, a scripted model answering at once) and on a hit
// (the entry decoded and replayed from the memory cache).
func BenchmarkResponseCacheFirstAnswerDelta(b *testing.B) {
	chain := pipelinetest.Chain(b, "rag", []any{"load_history", "response_cache", "search", "rerank", "merge", "chat_completion_stream"}, sections(nil))
	kb := &pipelinetest.Knowledge{Hits: hitsOf("resume-0", "run-0", "plugin-0")}
	model := pipelinetest.NewModel()
	model.SetDefault(pipelinetest.Script{Chunks: pipelinetest.Answer("Reconnect with the Last-Event-ID header [1]; the server replays what you missed.", 12)})
	c := pipelinetest.NewCache(0)
	firstDelta := func(b *testing.B, question string) time.Duration {
		var first time.Duration
		start := time.Now()
		cm := &pipeline.ChatManage{TenantID: "t", Query: question, Models: model, Knowledge: kb, Cache: c,
			Emitter: eventbus.EmitterFunc(func(ev eventbus.Event) {
				if ev.Type == eventbus.TypeAnswerDelta && first == 0 {
					first = time.Since(start)
				}
			})}
		if perr := chain.Execute(context.Background(), cm); perr != nil || first == 0 {
			b.Fatalf("err %v, first delta after %v", perr, first)
		}
		return first
	}
	run := func(b *testing.B, question func(n int) string) {
		b.ReportAllocs()
		firstDelta(b, question(0)) // a hit needs the entry stored
		var total time.Duration
		n := 0
		for b.Loop() {
			n++
			total += firstDelta(b, question(n))
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(n), "ns-to-first-delta")
	}
	asked := 0 // over every run of "miss": -count repeats it on this cache
	b.Run("miss", func(b *testing.B) {
		run(b, func(int) string { asked++; return fmt.Sprintf("How do I resume a stream, take %d?", asked) })
	})
	b.Run("hit", func(b *testing.B) {
		run(b, func(int) string { return "How do I resume a stream?" })
	})
}
