package pipelinetest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/cache"
	"github.com/chatpipe/chatpipe/internal/chatmodel"
	"github.com/chatpipe/chatpipe/internal/llm"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/internal/sharedcache"
)

// Models is a fixed set of chat models by name.
type Models map[string]*chatmodel.Model

// ChatModel implements chatmodel.Source, returning a copy.
func (m Models) ChatModel(name string) (*chatmodel.Model, error) {
	cm, ok := m[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", llm.ErrUnknownModel, name)
	}
	c := *cm
	return &c, nil
}

// Demo is chatpipe's offline demo model, streaming without delay.
func Demo() *chatmodel.Model {
	return &chatmodel.Model{Name: "default", Provider: "demo", Model: llm.NewDemo(0)}
}

// OpenAI is chatpipe's OpenAI-compatible client talking to baseURL (e.g.
// a fake provider's http://127.0.0.1:port/v1), without retries, on a
// connection pool emptied when the test ends.
func OpenAI(t testing.TB, baseURL string) *chatmodel.Model {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	m, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: baseURL, Model: "fake-model",
		HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	return &chatmodel.Model{Name: "default", Provider: "openai", Model: m}
}

// Knowledge is an in-memory knowledge base: Search returns Hits (or Err),
// and Version changes when the test calls Change, as it does in chatpipe
// when a document is added or deleted. Set Hits before the runs that read
// them.
type Knowledge struct {
	Hits   []retrieval.SearchHit
	Err    error
	Method string // "" = keyword

	mu       sync.Mutex
	version  int64
	requests []retrieval.SearchRequest
}

// Search implements retrieval.Knowledge.
func (k *Knowledge) Search(_ context.Context, req retrieval.SearchRequest) (retrieval.SearchResponse, error) {
	k.mu.Lock()
	k.requests = append(k.requests, req)
	k.mu.Unlock()
	if k.Err != nil {
		return retrieval.SearchResponse{}, k.Err
	}
	method := k.Method
	if method == "" {
		method = "keyword"
	}
	return retrieval.SearchResponse{Hits: slices.Clone(k.Hits), Method: method}, nil
}

// Version implements retrieval.Knowledge.
func (k *Knowledge) Version(context.Context) (int64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.version, nil
}

// Change advances the version, as adding or deleting a document does.
func (k *Knowledge) Change() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.version++
}

// Requests returns the searches so far.
func (k *Knowledge) Requests() []retrieval.SearchRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.requests)
}

// KnowledgeFunc adapts a search function to retrieval.Knowledge. Its
// version never changes; use Knowledge to test invalidation.
type KnowledgeFunc func(ctx context.Context, req retrieval.SearchRequest) (retrieval.SearchResponse, error)

// Search implements retrieval.Knowledge.
func (f KnowledgeFunc) Search(ctx context.Context, req retrieval.SearchRequest) (retrieval.SearchResponse, error) {
	return f(ctx, req)
}

// Version implements retrieval.Knowledge: always 0.
func (f KnowledgeFunc) Version(context.Context) (int64, error) { return 0, nil }

// Cache is chatpipe's memory cache (an LRU bounded in bytes) on a clock
// the test moves with Advance, so expiry needs no waiting.
type Cache struct {
	mem *cache.Memory

	mu   sync.Mutex
	now  time.Time
	gets int
	sets int
}

// NewCache returns an empty cache with a budget of maxBytes (0 = 64 MiB).
func NewCache(maxBytes int64) *Cache {
	c := &Cache{now: time.Unix(1_700_000_000, 0)}
	c.mem = cache.NewMemory(cache.MemoryOptions{MaxBytes: maxBytes, Now: c.clock})
	return c
}

func (c *Cache) clock() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the cache's clock forward.
func (c *Cache) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Get implements sharedcache.Store.
func (c *Cache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.mem.Get(ctx, key)
}

// Set implements sharedcache.Store.
func (c *Cache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	c.mu.Lock()
	c.sets++
	c.mu.Unlock()
	return c.mem.Set(ctx, key, value, ttl)
}

// Len is the number of values held.
func (c *Cache) Len() int { return c.mem.Len() }

// Counts returns the number of Get and Set calls so far.
func (c *Cache) Counts() (gets, sets int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets, c.sets
}

var (
	_ retrieval.Knowledge = (*Knowledge)(nil)
	_ retrieval.Knowledge = KnowledgeFunc(nil)
	_ sharedcache.Store   = (*Cache)(nil)
)
