package app_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/history/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// withOllamaMode adds an "ollama" model on the fake provider's native
// endpoint and a mode that uses it, and a mode with think_tags off.
func withOllamaMode(c *config.Config, provider *providertest.Server) {
	c.Models["ollama"] = config.Model{Provider: "ollama", BaseURL: provider.URL(), Model: "m", Retries: intp(0)}
	c.Pipelines["ollama"] = []any{"load_history", map[string]any{"chat_completion_stream": map[string]any{"model": "ollama"}}}
	c.Pipelines["notags"] = []any{map[string]any{"chat_completion_stream": map[string]any{"think_tags": false}}}
}

func (h *harness) askMode(session, mode, question string) []event {
	h.t.Helper()
	body, _ := json.Marshal(map[string]string{"content": question, "mode": mode})
	s := h.open("POST", "/api/v1/sessions/"+session+"/messages", string(body))
	return s.all()
}

// checkBlocks asserts thinking and answer blocks open and close in pairs.
func checkBlocks(t *testing.T, evs []event) {
	t.Helper()
	open := map[eventbus.Type]bool{}
	for _, e := range evs {
		switch e.Type {
		case eventbus.TypeThinkingStart, eventbus.TypeAnswerStart:
			if open[eventbus.TypeThinkingStart] || open[eventbus.TypeAnswerStart] {
				t.Fatalf("%s while a block is open: %v", e.Type, types(evs))
			}
			open[e.Type] = true
		case eventbus.TypeThinkingEnd:
			open[eventbus.TypeThinkingStart] = false
		case eventbus.TypeAnswerEnd:
			open[eventbus.TypeAnswerStart] = false
		}
	}
	if open[eventbus.TypeThinkingStart] || open[eventbus.TypeAnswerStart] {
		t.Fatalf("a block was left open: %v", types(evs))
	}
}

// Every reasoning dialect becomes the same thinking events, and inline
// <think> tags are found wherever the provider's chunks split them.
func TestThinkingFromEveryDialectAndSplitPoint(t *testing.T) {
	provider := providertest.New(t)
	cfg := baseConfig(t, provider)
	withOllamaMode(cfg, provider)
	h := startHarness(t, provider, cfg, "")
	const thought, answer = "plan: add 2 and 2", "It is 4."
	type tc struct {
		name   string
		mode   string
		script providertest.Script
	}
	cases := []tc{
		{"reasoning_content", "chat", providertest.Script{Chunks: append(providertest.ReasoningContent(thought, 4), providertest.Answer(answer, 3)...)}},
		{"reasoning", "chat", providertest.Script{Chunks: append(providertest.Reasoning(thought, 4), providertest.Answer(answer, 3)...)}},
		{"ollama thinking", "ollama", providertest.Script{Chunks: append(providertest.ReasoningContent(thought, 4), providertest.Answer(answer, 3)...)}},
	}
	inline := "<think>" + thought + "</think>\n\n" + answer
	for i := 0; i <= len(inline); i++ {
		cases = append(cases, tc{fmt.Sprintf("inline split at %d", i), "chat",
			providertest.Script{Chunks: []providertest.Chunk{{Content: inline[:i]}, {Content: inline[i:]}, {FinishReason: "stop"}}}})
	}
	session := h.createSession()
	for _, c := range cases {
		h.provider.Enqueue(c.script)
		evs := h.askMode(session, c.mode, "q")
		if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
			t.Fatalf("%s: finished %+v", c.name, fin)
		}
		checkBlocks(t, evs)
		if got := text(evs, eventbus.TypeThinkingDelta); got != "<think>"+thought+"</think>" {
			t.Fatalf("%s: thinking = %q", c.name, got)
		}
		if got := text(evs, eventbus.TypeAnswerDelta); got != answer {
			t.Fatalf("%s: answer = %q", c.name, got)
		}
	}

	// think_tags off: the same split, no tags.
	h.provider.Enqueue(providertest.Script{Chunks: append(providertest.ReasoningContent(thought, 2), providertest.Answer(answer, 2)...)})
	evs := h.askMode(session, "notags", "q")
	if got := text(evs, eventbus.TypeThinkingDelta); got != thought {
		t.Fatalf("think_tags off: thinking = %q", got)
	}
}

// Whatever ends the thinking, the tag is closed and blocks are balanced.
func TestThinkTagIsClosedOnEveryEnding(t *testing.T) {
	h := newHarness(t)
	session := h.createSession()
	for _, c := range []struct {
		name   string
		script providertest.Script
		status string
	}{
		{"provider never closes thinking", providertest.Script{Chunks: append(providertest.Content("<think>endless", 3), providertest.Chunk{FinishReason: "length"})}, eventbus.StatusFailed},
		{"reasoning field never followed by an answer", providertest.Script{Chunks: providertest.ReasoningContent("only thoughts", 2)}, eventbus.StatusFailed},
		{"error while thinking", providertest.Script{Chunks: providertest.Content("<think>deep thoughts", 3),
			MidStreamError: &providertest.StreamError{After: 3, ErrorObject: providertest.ErrorObject{Message: "boom"}}}, eventbus.StatusFailed},
		{"connection dropped while thinking", providertest.Script{Chunks: providertest.ReasoningContent("deep thoughts", 3), Drop: true}, eventbus.StatusFailed},
	} {
		h.provider.Enqueue(c.script)
		evs := h.ask(session, "q").all()
		checkBlocks(t, evs)
		got := text(evs, eventbus.TypeThinkingDelta)
		if len(got) < len("<think></think>") || got[:7] != "<think>" || got[len(got)-8:] != "</think>" {
			t.Fatalf("%s: thinking = %q", c.name, got)
		}
		if fin := finished(t, evs); fin.Status != c.status {
			t.Fatalf("%s: finished %+v", c.name, fin)
		}
		if _, ok := firstError(evs); !ok {
			t.Fatalf("%s: no error event", c.name)
		}
	}
}

// Thinking saved by earlier versions kept the wire's <think> tags; it is
// returned clean (stripped on read, no migration rewrites stored rows).
func TestThinkingSavedWithTagsIsReturnedClean(t *testing.T) {
	provider := providertest.New(t)
	cfg := baseConfig(t, provider)
	h := startHarness(t, provider, cfg, "")
	session := h.createSession()

	ctx := ctxTimeout(t)
	store, err := sqlitestore.Open(ctx, cfg.Storage.SQLite.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, reserved, err := store.StartTurn(ctx, session, history.Message{ID: uuid.NewString(), Role: history.RoleUser, Content: "q"}, uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.FinishMessage(ctx, reserved.ID, history.Final{Status: history.StatusCompleted,
		Content: "A.", Thinking: "<think>old thought</think>"}); err != nil {
		t.Fatal(err)
	}
	if msg := h.message(session, reserved.ID); msg.Thinking != "old thought" {
		t.Fatalf("thinking = %q, want the clean text", msg.Thinking)
	}
}
