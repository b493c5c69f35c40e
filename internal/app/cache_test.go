package app_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/internal/think"
)

// cachedRAG is the rag mode with response_cache right after load_history.
var cachedRAG = []any{"load_history", "response_cache", "rewrite", "search", "rerank", "merge", "chat_completion_stream"}

func withCachedRAG(c *config.Config) {
	c.DefaultMode = "rag"
	c.Pipelines = map[string][]any{"rag": cachedRAG, "chat": {"load_history", "chat_completion_stream"}}
}

// cacheStage is the detail of the closing response_cache stage event.
func cacheStage(t *testing.T, evs []event) string {
	t.Helper()
	st, ok := stages(evs)["response_cache"]
	if !ok {
		t.Fatalf("no response_cache stage: %v", types(evs))
	}
	return st.Detail
}

// A question asked again in a new session is answered from the cache: the
// provider gets no request, the stream is a stream of its own (new id,
// seqs from 1, references, thinking and answer blocks, completed), and the
// saved message is what it streamed.
func TestCachedAnswerIsReplayedThroughTheAPIWithoutCallingTheProvider(t *testing.T) {
	h := newHarness(t, withCachedRAG)
	h.addDocument("Sourdough", sourdough)
	h.provider.SetDefault(providertest.Script{Chunks: append(providertest.ReasoningContent("Passage one says it.", 2),
		providertest.Answer("Feed it twice a day [1].", 4)...)})
	const question = "How often do I feed a sourdough starter?"

	s1 := h.ask(h.createSession(), question)
	first := s1.all()
	if d := cacheStage(t, first); d != "cache miss" || len(h.provider.Requests()) != 1 {
		t.Fatalf("first ask: %q, %d provider requests", d, len(h.provider.Requests()))
	}

	session := h.createSession()
	s2 := h.ask(session, "how often do I feed a SOURDOUGH starter")
	second := s2.all()
	if d := cacheStage(t, second); d != "cache hit" {
		t.Fatalf("second ask: %q", d)
	}
	if n := len(h.provider.Requests()); n != 1 {
		t.Fatalf("a cache hit sent a request to the provider (%d requests)", n)
	}
	if fin := finished(t, second); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("finished = %+v", fin)
	}
	checkSeqs(t, second, 1)
	if s1.messageID() == s2.messageID() || second[0].StreamID != s2.messageID() {
		t.Fatalf("the replay reused stream %s", second[0].StreamID)
	}
	answer := text(second, eventbus.TypeAnswerDelta)
	if answer != "Feed it twice a day [1]." || answer != text(first, eventbus.TypeAnswerDelta) ||
		text(second, eventbus.TypeThinkingDelta) != text(first, eventbus.TypeThinkingDelta) {
		t.Fatalf("replayed %q / %q", answer, text(second, eventbus.TypeThinkingDelta))
	}
	refs := second[indexOf(second, eventbus.TypeReferences)].Payload.(eventbus.References).Items
	if len(refs) == 0 || refs[0].Title != "Sourdough" {
		t.Fatalf("references = %+v", refs)
	}
	h.waitDone(s2.messageID())
	msg := h.message(session, s2.messageID())
	if msg.Status != "completed" || msg.Content != answer || msg.Thinking != think.StripSaved(text(second, eventbus.TypeThinkingDelta)) {
		t.Fatalf("saved %+v, streamed %q", msg, answer)
	}
}

// Adding or deleting a document invalidates every cached answer.
func TestDocumentChangesInvalidateCachedAnswers(t *testing.T) {
	h := newHarness(t, withCachedRAG)
	doc := h.addDocument("Sourdough", sourdough)
	const question = "How often do I feed a sourdough starter?"
	h.ask(h.createSession(), question).all()
	if d := cacheStage(t, h.ask(h.createSession(), question).all()); d != "cache hit" {
		t.Fatalf("before any change: %q", d)
	}
	h.addDocument("Green tea", teaChinese)
	if d := cacheStage(t, h.ask(h.createSession(), question).all()); d != "cache miss" {
		t.Fatalf("after adding a document: %q", d)
	}
	if code := h.call("DELETE", "/api/v1/knowledge/documents/"+doc.ID, "", nil); code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("delete: %d", code)
	}
	if d := cacheStage(t, h.ask(h.createSession(), question).all()); d != "cache miss" {
		t.Fatalf("after deleting a document: %q", d)
	}
	if n := len(h.provider.Requests()); n != 3 {
		t.Fatalf("%d provider requests, want one per miss (3)", n)
	}
}

// One tenant's cached answer is never served to another.
func TestCachedAnswersStayWithTheirTenant(t *testing.T) {
	h := newHarness(t, withCachedRAG, withTwoTenants)
	acme, beta := h.as(acmeKey), h.as(betaKey)
	acme.addDocument("Sourdough", sourdough)
	beta.addDocument("Sourdough", sourdough)
	const question = "How often do I feed a sourdough starter?"
	acme.ask(acme.createSession(), question).all()
	if d := cacheStage(t, beta.ask(beta.createSession(), question).all()); d != "cache miss" {
		t.Fatalf("beta asked acme's question: %q", d)
	}
	if d := cacheStage(t, acme.ask(acme.createSession(), question).all()); d != "cache hit" {
		t.Fatalf("acme asked again: %q", d)
	}
	if n := len(h.provider.Requests()); n != 2 {
		t.Fatalf("%d provider requests, want 2", n)
	}
}

// A stopped answer is not cached: the next ask goes to the provider.
func TestStoppedAnswersAreNotCached(t *testing.T) {
	h := newHarness(t, withCachedRAG)
	h.addDocument("Sourdough", sourdough)
	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Feed it twice a day, every day.", 6), Hold: gate, HoldAfter: 3})
	const question = "How often do I feed a sourdough starter?"
	s := h.ask(h.createSession(), question)
	if err := gate.WaitReached(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	h.call("POST", "/api/v1/streams/"+s.messageID()+"/stop", "", nil)
	if fin := finished(t, s.all()); fin.Status != eventbus.StatusStopped {
		t.Fatalf("finished = %+v", fin)
	}
	h.waitDone(s.messageID())
	if d := cacheStage(t, h.ask(h.createSession(), question).all()); d != "cache miss" {
		t.Fatalf("after a stopped answer: %q", d)
	}
	if n := len(h.provider.Requests()); n != 2 {
		t.Fatalf("%d provider requests, want 2", n)
	}
}

// With stream_store redis the answers live in Redis, under the key prefix,
// so another replica (here: a second server on the same Redis and the same
// database, as replicas share one) serves them.
func TestCachedAnswersAreSharedThroughRedis(t *testing.T) {
	addr := os.Getenv("CHATPIPE_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("CHATPIPE_TEST_REDIS_ADDR not set: Redis tests skipped")
	}
	admin := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	defer admin.Close()
	if err := admin.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("Redis at %s (CHATPIPE_TEST_REDIS_ADDR) is not reachable: %v", addr, err)
	}
	prefix := "chatpipe-test:" + uuid.NewString() + ":"
	t.Cleanup(func() {
		if keys, _ := admin.Keys(context.Background(), prefix+"*").Result(); len(keys) > 0 {
			admin.Del(context.Background(), keys...)
		}
	})
	onRedis := func(c *config.Config) {
		withCachedRAG(c)
		c.StreamStore = "redis"
		c.Redis.Addr, c.Redis.KeyPrefix = addr, prefix
	}
	provider := providertest.New(t)
	const question = "How often do I feed a sourdough starter?"
	first := baseConfig(t, provider)
	onRedis(first)
	second := baseConfig(t, provider)
	onRedis(second)
	second.Storage = first.Storage
	replicas := []*harness{startHarness(t, provider, first, ""), startHarness(t, provider, second, "")}
	replicas[0].addDocument("Sourdough", sourdough)
	if d := cacheStage(t, replicas[0].ask(replicas[0].createSession(), question).all()); d != "cache miss" {
		t.Fatalf("first replica: %q", d)
	}
	keys, err := admin.Keys(context.Background(), prefix+"cache:response_cache:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys under the prefix: %v %v", keys, err)
	}
	if d := cacheStage(t, replicas[1].ask(replicas[1].createSession(), question).all()); d != "cache hit" {
		t.Fatalf("second replica: %q", d)
	}
	if n := len(provider.Requests()); n != 1 {
		t.Fatalf("%d provider requests, want 1", n)
	}
}

// BenchmarkTimeToFirstAnswerByteCache compares the time to the first
// answer byte (POST a question, read SSE until the first answer.delta) on
// a response_cache miss — search, rerank, merge and a fake provider over
// loopback HTTP — and on a hit, which replays the stored events. Every
// question goes to a new session; misses ask a new question each time.
func BenchmarkTimeToFirstAnswerByteCache(b *testing.B) {
	provider := providertest.New(b)
	provider.SetDefault(providertest.Script{Chunks: providertest.Answer("first byte then the rest of the answer [1]", 8), NoRolePreamble: true})
	cfg := benchConfig(b, provider.BaseURL())
	withCachedRAG(cfg)
	srv, _ := benchApp(b, cfg, &http.Client{Transport: &http.Transport{}})
	client := &http.Client{Transport: &http.Transport{}}
	ingestBenchDocs(b, client, srv.URL)
	ask := func(b *testing.B, question string) {
		b.StopTimer()
		session := newSession(b, client, srv.URL, "rag")
		b.StartTimer()
		if rest := firstAnswerDelta(b, client, srv.URL, session, question); !strings.Contains(string(rest), `"status":"completed"`) {
			b.Fatalf("the answer did not complete: %s", rest)
		}
	}
	asked := 0 // over every run of "miss" (-count repeats it on this server)
	b.Run("miss", func(b *testing.B) {
		b.ReportAllocs()
		requests, n := len(provider.Requests()), 0
		for b.Loop() {
			n++
			asked++
			ask(b, fmt.Sprintf("How do I resume a stream after a dropped connection, take %d?", asked))
		}
		if got := len(provider.Requests()) - requests; got != n {
			b.Fatalf("%d provider requests for %d misses", got, n)
		}
	})
	b.Run("hit", func(b *testing.B) {
		b.ReportAllocs()
		const question = "How do I resume a stream after a dropped connection?"
		ask(b, question) // stores it
		requests := len(provider.Requests())
		for b.Loop() {
			ask(b, question)
		}
		if len(provider.Requests()) != requests {
			b.Fatal("a hit called the provider")
		}
	})
}
