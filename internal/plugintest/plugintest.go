// Package plugintest runs plugin chains in tests without HTTP or a
// database: build a chain from YAML-like entries, run one request through
// a real pipeline.EventManager, and read back the recorded events.
//
//	chain := plugintest.Chain(t, "rag", []any{"search", "merge", "chat_completion_stream"}, nil)
//	res := plugintest.Run(ctx, chain, plugintest.Request{
//		Query:     "How do I resume a stream?",
//		Models:    plugintest.Models{"default": plugintest.Demo()},
//		Knowledge: plugintest.KnowledgeFunc(search),
//	})
//	res.Answer() // the concatenated answer deltas: what would be saved
//
// Plugins are found by name in the pipeline registry, so a test imports
// the packages that register them (package plugins for the built-ins).
// Models are the offline demo model or the real OpenAI-compatible client
// talking to a providertest.Server.
package plugintest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/llm"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/pipeline"
)

// Chain builds mode's chain from entries written as in config.yaml's
// pipelines (a plugin name, or map[string]any{name: settings}) and
// sections as in its plugins. It fails the test on a config error.
func Chain(t testing.TB, mode string, entries []any, sections map[string]map[string]any) *pipeline.EventManager {
	t.Helper()
	m, err := BuildChain(mode, entries, sections)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// BuildChain is Chain returning the error, for tests of config errors.
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

// Request is one request through a chain.
type Request struct {
	Query     string
	History   []pipeline.HistoryMessage // served to load_history, oldest first
	Models    pipeline.ModelSource
	Knowledge pipeline.Knowledge
	// Setup, when set, adjusts the request state before the chain runs
	// (e.g. candidates for a chain that starts at merge).
	Setup func(cm *pipeline.ChatManage)
}

// Result is what a request produced.
type Result struct {
	Events []eventbus.Event
	Err    *pipeline.PluginError // what Execute returned
	State  *pipeline.ChatManage  // the request state after the chain
}

// Run executes chain for req with a recorder as the emitter.
func Run(ctx context.Context, chain *pipeline.EventManager, req Request) *Result {
	rec := &Recorder{}
	cm := &pipeline.ChatManage{
		SessionID: "session-1", MessageID: "message-2", UserMessageID: "message-1",
		Mode: chain.Mode(), Query: req.Query, Emitter: rec,
		Models: req.Models, Knowledge: req.Knowledge,
	}
	if req.History != nil {
		cm.Messages = history(req.History)
	}
	if req.Setup != nil {
		req.Setup(cm)
	}
	perr := chain.Execute(ctx, cm)
	return &Result{Events: rec.Events(), Err: perr, State: cm}
}

// Answer is the concatenation of the answer deltas: what the persister saves.
func (r *Result) Answer() string { return r.text(eventbus.TypeAnswerDelta) }

// Thinking is the concatenation of the thinking deltas.
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

// Recorder is an emitter that keeps every event, in order.
type Recorder struct {
	mu     sync.Mutex
	events []eventbus.Event
}

// Emit implements eventbus.Emitter.
func (r *Recorder) Emit(ev eventbus.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

// Events returns a copy of the events so far.
func (r *Recorder) Events() []eventbus.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]eventbus.Event(nil), r.events...)
}

// Models is a fixed set of chat models by name.
type Models map[string]*pipeline.ChatModel

// ChatModel implements pipeline.ModelSource, returning a copy.
func (m Models) ChatModel(name string) (*pipeline.ChatModel, error) {
	cm, ok := m[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", llm.ErrUnknownModel, name)
	}
	c := *cm
	return &c, nil
}

// Demo is the offline demo model, streaming without delay.
func Demo() *pipeline.ChatModel {
	return &pipeline.ChatModel{Name: "default", Provider: "demo", Model: llm.NewDemo(0)}
}

// OpenAI is the real OpenAI-compatible client talking to srv, without
// retries, on a connection pool emptied when the test ends (so no
// keep-alive goroutine outlives it).
func OpenAI(t testing.TB, srv *providertest.Server) *pipeline.ChatModel {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	m, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.BaseURL(), Model: "fake-model",
		HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	return &pipeline.ChatModel{Name: "default", Provider: "openai", Model: m}
}

// KnowledgeFunc adapts a function to pipeline.Knowledge.
type KnowledgeFunc func(ctx context.Context, req pipeline.SearchRequest) (pipeline.SearchResponse, error)

// Search implements pipeline.Knowledge.
func (f KnowledgeFunc) Search(ctx context.Context, req pipeline.SearchRequest) (pipeline.SearchResponse, error) {
	return f(ctx, req)
}

// history serves fixed messages to load_history.
type history []pipeline.HistoryMessage

func (h history) RecentMessages(_ context.Context, _, _ string, limit int) ([]pipeline.HistoryMessage, error) {
	if limit > 0 && len(h) > limit {
		return h[len(h)-limit:], nil
	}
	return h, nil
}
