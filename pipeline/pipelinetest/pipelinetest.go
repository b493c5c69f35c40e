// Package pipelinetest runs plugin chains in tests, in the spirit of
// net/http/httptest: build a chain as config.yaml would, run one request
// through the real pipeline.EventManager with a scripted model and an
// event recorder, and assert on the recorded events. No HTTP server, no
// database, no real model.
//
//	model := pipelinetest.NewModel(pipelinetest.Script{Chunks: pipelinetest.Answer("Hello there.", 3)})
//	chain := pipelinetest.Chain(t, "chat", []any{"my_plugin", "chat_completion_stream"}, nil)
//	res := pipelinetest.Run(t.Context(), chain, pipelinetest.Request{Query: "Hi", Models: model})
//	res.Answer() // "Hello there.": the concatenated answer deltas, what chatpipe saves
//
// Plugins are found by name in the pipeline registry, so a test imports
// the packages that register them (github.com/chatpipe/chatpipe/plugins
// for the built-ins, blank if nothing else is used).
package pipelinetest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/chatmodel"
	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/internal/sharedcache"
	"github.com/chatpipe/chatpipe/pipeline"
)

// Chain builds mode's chain from entries written as in config.yaml's
// pipelines (a plugin name, or map[string]any{name: settings}) and
// sections as in its plugins (nil: every plugin on its built-in defaults).
// It fails the test on a configuration error.
func Chain(t testing.TB, mode string, entries []any, sections map[string]map[string]any) *pipeline.EventManager {
	t.Helper()
	m, err := BuildChain(mode, entries, sections)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// BuildChain is Chain returning the error, for tests of configuration
// errors. Entries are parsed exactly as config.yaml's are.
func BuildChain(mode string, entries []any, sections map[string]map[string]any) (*pipeline.EventManager, error) {
	cfg := &config.Config{Pipelines: map[string][]any{mode: entries}}
	parsed, err := cfg.Chain(mode)
	if err != nil {
		return nil, err
	}
	chain := make([]pipeline.ChainEntry, len(parsed))
	for i, e := range parsed {
		chain[i] = pipeline.ChainEntry{Name: e.Name, Overrides: e.Overrides}
	}
	return pipeline.Build(mode, chain, sections)
}

// Request is one request through a chain. Zero fields are left out: no
// history store, no knowledge base, no cache.
type Request struct {
	TenantID  string // "" = "default"
	SessionID string // "" = "session-1"
	Query     string
	// History is served to load_history, oldest first.
	History []conversation.Message
	// Models resolves model names; a *Model serves every name.
	Models    chatmodel.Source
	Knowledge retrieval.Knowledge
	Cache     sharedcache.Store
	// Setup, when set, adjusts the request state before the chain runs
	// (e.g. candidates for a chain that starts at merge).
	Setup func(cm *pipeline.ChatManage)
}

// Result is what one request produced.
type Result struct {
	// Events are the events the chain emitted, in order, numbered from 1
	// and stamped with the request's message id as the stream id. The
	// run's own events (stream.started, error, stream.finished) are not
	// among them: those are chatpipe's, not the plugins'.
	Events []eventbus.Event
	Err    *pipeline.PluginError // what Execute returned
	State  *pipeline.ChatManage  // the request state after the chain
	// Elapsed is how long the chain ran.
	Elapsed time.Duration
}

var messageSeq atomic.Int64

// Run executes chain for req with a Recorder as the emitter. Every run
// gets message ids of its own, as a new stream would.
func Run(ctx context.Context, chain *pipeline.EventManager, req Request) *Result {
	n := messageSeq.Add(2)
	cm := &pipeline.ChatManage{
		TenantID:      firstNonEmpty(req.TenantID, "default"),
		SessionID:     firstNonEmpty(req.SessionID, "session-1"),
		UserMessageID: "message-" + strconv.FormatInt(n-1, 10),
		MessageID:     "message-" + strconv.FormatInt(n, 10),
		Mode:          chain.Mode(),
		Query:         req.Query,
		Models:        req.Models,
		Knowledge:     req.Knowledge,
		Cache:         req.Cache,
	}
	rec := NewRecorder(cm.MessageID)
	cm.Emitter = rec
	if req.History != nil {
		cm.Messages = history(req.History)
	}
	if req.Setup != nil {
		req.Setup(cm)
	}
	start := time.Now()
	perr := chain.Execute(ctx, cm)
	return &Result{Events: rec.Events(), Err: perr, State: cm, Elapsed: time.Since(start)}
}

func firstNonEmpty(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// Answer is the concatenation of the answer deltas: exactly what chatpipe
// saves as the assistant message, whatever the ending.
func (r *Result) Answer() string { return r.text(eventbus.TypeAnswerDelta) }

// Thinking is the concatenation of the thinking deltas: what chatpipe
// saves as the message's thinking.
func (r *Result) Thinking() string { return r.text(eventbus.TypeThinkingDelta) }

func (r *Result) text(t eventbus.Type) string {
	var b strings.Builder
	for _, ev := range r.Events {
		if ev.Type == t {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

// Deltas lists the texts of the events of type t, one per event, to
// check how output was cut.
func (r *Result) Deltas(t eventbus.Type) []string {
	var out []string
	for _, ev := range r.Events {
		if ev.Type == t {
			out = append(out, ev.Text)
		}
	}
	return out
}

// Types lists the event types in order.
func (r *Result) Types() []eventbus.Type {
	out := make([]eventbus.Type, len(r.Events))
	for i, ev := range r.Events {
		out[i] = ev.Type
	}
	return out
}

// Index is the position of the first event of type t, or -1.
func (r *Result) Index(t eventbus.Type) int {
	for i, ev := range r.Events {
		if ev.Type == t {
			return i
		}
	}
	return -1
}

// Count is the number of events of type t.
func (r *Result) Count(t eventbus.Type) int {
	n := 0
	for _, ev := range r.Events {
		if ev.Type == t {
			n++
		}
	}
	return n
}

// Stage is the closing stage event (finished, skipped or failed) of the
// named stage, and whether there was one.
func (r *Result) Stage(name string) (eventbus.Stage, bool) {
	for i := len(r.Events) - 1; i >= 0; i-- {
		if s, ok := r.Events[i].Payload.(eventbus.Stage); ok && s.Name == name && s.Status != eventbus.StageStarted {
			return s, true
		}
	}
	return eventbus.Stage{}, false
}

// References is the payload of the references event, and whether there was one.
func (r *Result) References() ([]eventbus.Reference, bool) {
	for _, ev := range r.Events {
		if p, ok := ev.Payload.(eventbus.References); ok {
			return p.Items, true
		}
	}
	return nil, false
}

// Rewritten is the payload of the query.rewritten event, and whether there was one.
func (r *Result) Rewritten() (eventbus.QueryRewritten, bool) {
	for _, ev := range r.Events {
		if p, ok := ev.Payload.(eventbus.QueryRewritten); ok {
			return p, true
		}
	}
	return eventbus.QueryRewritten{}, false
}

// Status is the status chatpipe would finish the stream with: completed
// when the chain returned nil, stopped when it was cancelled, failed
// otherwise.
func (r *Result) Status() string {
	switch {
	case r.Err == nil:
		return eventbus.StatusCompleted
	case r.Err.Code == pipeline.CodeCanceled:
		return eventbus.StatusStopped
	default:
		return eventbus.StatusFailed
	}
}

// Recorder is an emitter that keeps every event, in order, numbering
// them as a stream does. It is safe for concurrent use.
type Recorder struct {
	streamID string

	mu     sync.Mutex
	events []eventbus.Event
}

// NewRecorder returns an empty recorder for the stream streamID.
func NewRecorder(streamID string) *Recorder { return &Recorder{streamID: streamID} }

// Emit implements eventbus.Emitter.
func (r *Recorder) Emit(ev eventbus.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.Seq = int64(len(r.events) + 1)
	ev.StreamID = r.streamID
	ev.Time = time.Now().UnixMilli()
	r.events = append(r.events, ev)
}

// Events returns a copy of the events so far.
func (r *Recorder) Events() []eventbus.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]eventbus.Event(nil), r.events...)
}

// history serves fixed messages to load_history.
type history []conversation.Message

func (h history) Branch(_ context.Context, _, _ string, limit int) ([]conversation.Message, error) {
	if limit > 0 && len(h) > limit {
		return h[len(h)-limit:], nil
	}
	return h, nil
}
