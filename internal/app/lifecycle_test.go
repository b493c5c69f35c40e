package app_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/pipeline"
)

// Test plugins: one that panics mid-thought, one that holds a request
// until the test lets it go.
func init() {
	pipeline.Register("test_panic", func(pipeline.PluginConfig) (pipeline.Plugin, error) { return panicker{}, nil })
	pipeline.Register("test_gate", func(pipeline.PluginConfig) (pipeline.Plugin, error) { return gatePlugin{}, nil })
}

type panicker struct{}

func (panicker) Name() string                 { return "test_panic" }
func (panicker) Events() []pipeline.EventType { return []pipeline.EventType{"test_panic"} }
func (panicker) OnEvent(_ context.Context, _ pipeline.EventType, cm *pipeline.ChatManage, _ func() *pipeline.PluginError) *pipeline.PluginError {
	cm.Emit(eventbus.Event{Type: eventbus.TypeThinkingStart})
	cm.Emit(eventbus.Delta(eventbus.TypeThinkingDelta, "<think>half a thought"))
	cm.Emit(eventbus.Of(eventbus.TypeStreamFinished, eventbus.Finished{Status: "completed"})) // not a plugin's to send
	panic("plugin bug")
}

// gates holds the channels test_gate waits on, by question.
var gates sync.Map

type gatePlugin struct{}

func (gatePlugin) Name() string                 { return "test_gate" }
func (gatePlugin) Events() []pipeline.EventType { return []pipeline.EventType{"test_gate"} }
func (gatePlugin) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage, next func() *pipeline.PluginError) *pipeline.PluginError {
	if ch, ok := gates.Load(cm.Query); ok {
		select {
		case <-ch.(chan struct{}):
		case <-ctx.Done():
			return pipeline.Canceled(ctx)
		}
	}
	return next()
}

func TestAPanickingPluginEndsTheStreamCleanly(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.Pipelines["chat"] = []any{"test_panic", "chat_completion_stream"}
	})
	session := h.createSession()
	s := h.ask(session, "q")
	evs := s.all()
	checkBlocks(t, evs)
	fin := finished(t, evs)
	if fin.Status != eventbus.StatusFailed || fin.Reason != pipeline.CodeInternal {
		t.Fatalf("finished = %+v (a plugin's own stream.finished must be ignored)", fin)
	}
	e, ok := firstError(evs)
	if !ok || e.Code != pipeline.CodeInternal || strings.Contains(e.Message, "plugin bug") {
		t.Fatalf("error = %+v", e)
	}
	if got := text(evs, eventbus.TypeThinkingDelta); got != "<think>half a thought</think>" {
		t.Fatalf("thinking = %q", got)
	}
	h.waitDone(s.messageID())
	if msg := h.message(session, s.messageID()); msg.Status != "failed" || msg.Thinking != "half a thought" {
		t.Fatalf("saved = %+v", msg)
	}
	// The server is still fine.
	if code := h.call("GET", "/healthz", "", nil); code != 200 {
		t.Fatalf("healthz after panic: %d", code)
	}
}

func systemPrompt(r providertest.Request) string {
	m := r.Body["messages"].([]any)[0].(map[string]any)
	if m["role"] != "system" {
		return ""
	}
	return m["content"].(string)
}

// Editing config.yaml applies to new requests; a request already running
// keeps the configuration it started with; a broken edit is ignored.
func TestHotReloadAppliesToNewRequestsOnly(t *testing.T) {
	provider := providertest.New(t)
	provider.SetDefault(providertest.Script{Chunks: providertest.Answer("ok", 1)})
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	write := func(prompt string, extra string) {
		t.Helper()
		yaml := `
storage:
  sqlite:
    path: ` + filepath.Join(dir, "db.sqlite") + `
models:
  default:
    provider: openai
    base_url: ` + provider.BaseURL() + `
    model: fake
    retries: 0
default_mode: chat
pipelines:
  chat: [test_gate, load_history, chat_completion_stream` + extra + `]
plugins:
  chat_completion_stream:
    system_prompt: "` + prompt + `"
`
		replaceFile(t, path, yaml)
	}
	write("prompt A", "")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, provider, cfg, path)
	session := h.createSession()

	// A request that starts under A and is held before it reaches the model.
	release := make(chan struct{})
	gates.Store("held", release)
	defer gates.Delete("held")
	held := h.ask(session, "held")
	held.until(func(e event) bool {
		st, ok := e.Payload.(eventbus.Stage)
		return ok && st.Name == "test_gate" && st.Status == eventbus.StageStarted
	})

	waitConfig := func(what string, cond func(*config.Config) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond(h.app.Config()) {
			if time.Now().After(deadline) {
				t.Fatalf("config never reloaded: %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	prompt := func(c *config.Config) any { return c.Plugins["chat_completion_stream"]["system_prompt"] }

	write("prompt B", "")
	waitConfig("prompt B", func(c *config.Config) bool { return prompt(c) == "prompt B" })
	h.ask(session, "new").all()
	close(release)
	held.all()
	reqs := provider.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d provider requests", len(reqs))
	}
	for _, r := range reqs {
		msgs := r.Body["messages"].([]any)
		q := msgs[len(msgs)-1].(map[string]any)["content"]
		want := map[any]string{"held": "prompt A", "new": "prompt B"}[q]
		if got := systemPrompt(r); got != want {
			t.Fatalf("request %q got system prompt %q, want %q", q, got, want)
		}
	}

	// A broken edit (an unknown plugin) is logged and ignored...
	before := h.app.Config()
	write("prompt C", ", no_such_plugin")
	h.waitLog("config reload rejected")
	if h.app.Config() != before {
		t.Fatal("a broken config was applied")
	}
	if evs := h.ask(session, "during").all(); finished(t, evs).Status != eventbus.StatusCompleted {
		t.Fatal("requests fail after a broken edit")
	}
	// ...and a later good edit is applied.
	write("prompt D", "")
	waitConfig("prompt D", func(c *config.Config) bool { return prompt(c) == "prompt D" })
	if h.app.Config() == before {
		t.Fatal("config not replaced")
	}
	evs := h.ask(session, "after").all()
	if finished(t, evs).Status != eventbus.StatusCompleted {
		t.Fatal("request after reloads failed")
	}
	last := provider.Requests()[len(provider.Requests())-1]
	if got := systemPrompt(last); got != "prompt D" {
		t.Fatalf("system prompt after reloads = %q", got)
	}
}
