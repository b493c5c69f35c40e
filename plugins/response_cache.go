package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("response_cache", newResponseCache) }

// ResponseCacheConfig is the `plugins.response_cache` section.
type ResponseCacheConfig struct {
	TTL time.Duration `mapstructure:"ttl"` // how long a cached answer is served
	// MaxEntryBytes bounds one cached answer (its events as JSON); longer
	// answers are not cached.
	MaxEntryBytes int `mapstructure:"max_entry_bytes"`
	// MaxBytes is the budget of the memory store, shared by every mode.
	// The app reads it once, at start; the plugin only validates it.
	MaxBytes int64 `mapstructure:"max_bytes"`
	// FollowUps also caches questions asked after earlier turns, keyed by
	// those turns as well. Off, only questions without history are cached
	// and served.
	FollowUps bool `mapstructure:"follow_ups"`
}

// ResponseCache serves repeated questions from a cache of finished
// answers. A hit replays the cached events (references, thinking, answer,
// tool calls) as a normal stream and ends the chain without calling the
// model; its stage says "cache hit". A miss runs the rest of the chain,
// records what it emits and stores it — only when the chain returned nil
// with an answer and no error event, so stopped, failed and filtered
// answers are never cached.
//
// The key is the tenant, the mode's configuration (PluginConfig.
// Fingerprint), the knowledge base version (so any document change
// invalidates), the normalised question and the conversation before it.
// The plugin must come after load_history, which it checks at start.
type ResponseCache struct {
	cfg         ResponseCacheConfig
	fingerprint string
}

const (
	cacheKeyVersion = "response_cache/v1" // change when the key or entry format changes
	cacheTimeout    = time.Second         // bound of a cache lookup or store: a slow cache is a miss
)

func newResponseCache(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := ResponseCacheConfig{TTL: time.Hour, MaxEntryBytes: 256 << 10, MaxBytes: 64 << 20}
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	switch {
	case cfg.TTL <= 0:
		return nil, fmt.Errorf("%s.ttl: must be positive", c.Key)
	case cfg.MaxEntryBytes <= 0:
		return nil, fmt.Errorf("%s.max_entry_bytes: must be positive", c.Key)
	case cfg.MaxBytes < 0:
		return nil, fmt.Errorf("%s.max_bytes: must not be negative", c.Key)
	}
	self, history := slices.Index(c.Chain, "response_cache"), slices.Index(c.Chain, "load_history")
	if history > self {
		return nil, fmt.Errorf("pipelines.%s: response_cache must come after load_history: "+
			"an answer depends on the conversation, which is only known once it is loaded", c.Mode)
	}
	return &ResponseCache{cfg: cfg, fingerprint: c.Fingerprint}, nil
}

// Name implements pipeline.Plugin.
func (p *ResponseCache) Name() string { return "response_cache" }

// Events implements pipeline.Plugin.
func (p *ResponseCache) Events() []pipeline.EventType { return []pipeline.EventType{"response_cache"} }

// OnEvent implements pipeline.Plugin.
func (p *ResponseCache) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	start := time.Now()
	switch {
	case cm.Cache == nil:
		cm.SkipStage("no cache configured")
		return next()
	case len(cm.History) > 0 && !p.cfg.FollowUps:
		cm.SkipStage("follow-up question; not cached")
		return next()
	case cm.Model != "": // the answers stored are the configured model's
		cm.SkipStage("the request chose the model; not cached")
		return next()
	}
	question := normalizeQuestion(cm.Query)
	var version int64
	if cm.Knowledge != nil {
		v, err := cm.Knowledge.Version(ctx)
		if err != nil {
			if perr := pipeline.Canceled(ctx); perr != nil {
				return perr
			}
			cm.SkipStage("knowledge base version unavailable; not cached")
			return next()
		}
		version = v
	}
	conversation := historyDigest(cm.History)
	key := p.key(cm.TenantID, version, question, conversation)

	// Before: a hit ends the chain here.
	lookup, cancel := context.WithTimeout(ctx, cacheTimeout)
	data, ok, err := cm.Cache.Get(lookup, key)
	cancel()
	unavailable := err != nil
	switch {
	case unavailable:
		if perr := pipeline.Canceled(ctx); perr != nil {
			return perr
		}
		cm.StageDetail("cache unavailable") // and no store either: it would wait as long again
	case ok:
		if events, err := decodeCacheEntry(data, cm.TenantID, question); err == nil {
			cm.StageDetail("cache hit")
			for _, ev := range events {
				cm.Emit(ev)
			}
			cm.Emit(eventbus.Of(eventbus.TypeUsage, eventbus.Usage{TotalMS: time.Since(start).Milliseconds()}))
			return nil
		}
		cm.StageDetail("cache miss")
	default:
		cm.StageDetail("cache miss")
	}

	// Around next(): record what the rest of the chain emits.
	rec := &answerRecorder{inner: cm.Emitter, max: p.cfg.MaxEntryBytes}
	cm.Emitter = rec
	perr := next()
	cm.Emitter = rec.inner

	// After: store a complete answer, if the key still describes it.
	if perr == nil && ctx.Err() == nil && !unavailable && historyDigest(cm.History) == conversation {
		if entry, ok := rec.entry(cm.TenantID, question); ok {
			store, cancel := context.WithTimeout(ctx, cacheTimeout)
			_ = cm.Cache.Set(store, key, entry, p.cfg.TTL) // a cache that fails just misses next time
			cancel()
		}
	}
	return perr
}

// key is the cache key of a question: a digest, so neither the tenant nor
// the question appears in the store's key space.
func (p *ResponseCache) key(tenant string, version int64, question, conversation string) string {
	parts, _ := json.Marshal([]any{cacheKeyVersion, tenant, p.fingerprint, version, question, conversation})
	sum := sha256.Sum256(parts)
	return "response_cache:" + hex.EncodeToString(sum[:])
}

// normalizeQuestion is the form questions are compared in: compatibility
// normalised (full-width letters, ligatures), lower case, single spaces,
// without the closing punctuation.
func normalizeQuestion(q string) string {
	q = strings.ToLower(norm.NFKC.String(q))
	q = strings.Join(strings.Fields(q), " ")
	return strings.TrimRight(q, "?!.。 ")
}

// historyDigest identifies the conversation before the question ("" for
// none).
func historyDigest(history []conversation.Message) string {
	if len(history) == 0 {
		return ""
	}
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, m := range history {
		_ = enc.Encode([2]string{m.Role, m.Content})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// answerRecorder passes every event on and keeps, as JSON, those a replay
// needs: not the stages (their timings belong to the original run), not
// the usage (a replay spends no tokens), and it notes an error event,
// which makes the answer one not to cache.
type answerRecorder struct {
	inner eventbus.Emitter
	max   int

	mu       sync.Mutex
	events   []byte // JSON objects, comma separated
	answered bool
	failed   bool
	tooBig   bool
}

// Emit implements eventbus.Emitter.
func (r *answerRecorder) Emit(ev eventbus.Event) {
	r.inner.Emit(ev)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Type {
	case eventbus.TypeStage, eventbus.TypeUsage, eventbus.TypeStreamStarted, eventbus.TypeStreamFinished,
		eventbus.TypeResyncRequired:
		return
	case eventbus.TypeError:
		r.failed = true
		return
	case eventbus.TypeAnswerDelta:
		r.answered = r.answered || ev.Text != ""
	}
	if r.tooBig {
		return
	}
	if len(r.events) > 0 {
		r.events = append(r.events, ',')
	}
	ev.Seq, ev.StreamID, ev.Time = 0, "", 0
	var err error
	if r.events, err = eventbus.AppendJSON(r.events, &ev); err != nil || len(r.events) > r.max {
		r.tooBig, r.events = true, nil
	}
}

// cacheEntry is what is stored: who asked what, for a check on reading,
// and the events to replay.
type cacheEntry struct {
	Tenant   string            `json:"tenant"`
	Question string            `json:"question"`
	Events   []json.RawMessage `json:"events"`
}

// entry returns the stored form of the recorded answer, or false when it
// is not one to cache.
func (r *answerRecorder) entry(tenant, question string) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.answered || r.failed || r.tooBig {
		return nil, false
	}
	out := []byte(`{"tenant":`)
	out = eventbus.AppendString(out, tenant)
	out = append(out, `,"question":`...)
	out = eventbus.AppendString(out, question)
	out = append(out, `,"events":[`...)
	out = append(out, r.events...)
	return append(out, "]}"...), true
}

// decodeCacheEntry returns the events of an entry stored for this tenant
// and question; any mismatch or damage is an error (and a miss).
func decodeCacheEntry(data []byte, tenant, question string) ([]eventbus.Event, error) {
	var e cacheEntry
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("response_cache: decode entry: %w", err)
	}
	if e.Tenant != tenant || e.Question != question {
		return nil, fmt.Errorf("response_cache: entry of another question")
	}
	events := make([]eventbus.Event, len(e.Events))
	for i, raw := range e.Events {
		ev, err := eventbus.Decode(raw)
		if err != nil {
			return nil, err
		}
		events[i] = ev
	}
	return events, nil
}

var (
	_ pipeline.Plugin  = (*ResponseCache)(nil)
	_ eventbus.Emitter = (*answerRecorder)(nil)
)
