package handler

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
)

func TestStripThinkTags(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Hello.", "Hello."},
		{"<think>plan</think>Hello.", "Hello."},
		{"<think>plan</think>\n\nHello.", "Hello."},
		{"A <think>x</think>B<think>y</think> C", "A B C"},
		{"Answer. <think>never closed", "Answer."},
	} {
		if got := stripThinkTags(tc.in); got != tc.want {
			t.Errorf("stripThinkTags(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// thinking emits one thinking block as chat_completion_stream does, with
// or without its own tags.
func thinking(tagged bool, parts ...string) []eventbus.Event {
	evs := []eventbus.Event{{Type: eventbus.TypeThinkingStart}}
	for i, p := range parts {
		if tagged && i == 0 {
			p = "<think>" + p
		}
		evs = append(evs, eventbus.Delta(eventbus.TypeThinkingDelta, p))
	}
	if tagged {
		evs = append(evs, eventbus.Delta(eventbus.TypeThinkingDelta, "</think>"))
	}
	return append(evs, eventbus.Event{Type: eventbus.TypeThinkingEnd})
}

// The output depends on the request's choice only, never on whether the
// mode's own thinking deltas carry tags.
func TestCompletionBuilderThinkingForms(t *testing.T) {
	for _, modeTags := range []bool{true, false} {
		var evs []eventbus.Event
		evs = append(evs, thinking(modeTags, "first ", "thought")...)
		evs = append(evs, eventbus.Event{Type: eventbus.TypeAnswerStart}, eventbus.Delta(eventbus.TypeAnswerDelta, "Answer"),
			eventbus.Event{Type: eventbus.TypeAnswerEnd})
		evs = append(evs, thinking(modeTags, "second")...)
		evs = append(evs, eventbus.Delta(eventbus.TypeAnswerDelta, "."),
			eventbus.Of(eventbus.TypeStreamFinished, eventbus.Finished{Status: eventbus.StatusCompleted}))

		reasoning := newCompletionBuilder("s", "chat", false)
		tags := newCompletionBuilder("s", "chat", true)
		for _, ev := range evs {
			reasoning.apply(ev)
			tags.apply(ev)
		}
		if got := reasoning.reasoning(); got != "first thoughtsecond" {
			t.Errorf("mode tags %v: reasoning_content = %q", modeTags, got)
		}
		if got := reasoning.content(); got != "Answer." {
			t.Errorf("mode tags %v: content = %q", modeTags, got)
		}
		if got, want := tags.content(), "<think>first thought</think>Answer<think>second</think>."; got != want || tags.reasoning() != "" {
			t.Errorf("mode tags %v: tagged content = %q, want %q", modeTags, got, want)
		}
		// Consecutive pieces of one kind go out as one delta.
		if n := len(reasoning.pending); n != 4 {
			t.Errorf("mode tags %v: %d pending pieces, want 4", modeTags, n)
		}
		if reasoning.finishReason() != "stop" {
			t.Errorf("finish reason %q", reasoning.finishReason())
		}
	}
}

func TestCompletionBuilderClosesAnOpenTagAtTheEnd(t *testing.T) {
	b := newCompletionBuilder("s", "chat", true)
	b.apply(eventbus.Event{Type: eventbus.TypeThinkingStart})
	b.apply(eventbus.Delta(eventbus.TypeThinkingDelta, "cut short"))
	b.apply(eventbus.Of(eventbus.TypeStreamFinished, eventbus.Finished{Status: eventbus.StatusStopped, Reason: "user"}))
	if got := b.content(); got != "<think>cut short</think>" || b.finishReason() != "stop" {
		t.Fatalf("content %q, finish %q", got, b.finishReason())
	}
}

func TestCompletionBuilderFailures(t *testing.T) {
	for _, tc := range []struct {
		code   string
		status int
		typ    string
	}{
		{"rate_limited", 429, "rate_limit_error"},
		{"provider_error", 502, "server_error"},
		{"timeout", 504, "server_error"},
		{"bad_request", 400, "invalid_request_error"},
		{"internal_error", 500, "server_error"},
	} {
		b := newCompletionBuilder("s", "chat", false)
		b.apply(eventbus.Of(eventbus.TypeError, eventbus.Error{Code: tc.code, Message: "It broke."}))
		b.apply(eventbus.Of(eventbus.TypeStreamFinished, eventbus.Finished{Status: eventbus.StatusFailed, Reason: tc.code}))
		status, body := b.failure()
		if b.finishReason() != "" || status != tc.status || body.Error.Type != tc.typ || *body.Error.Code != tc.code ||
			body.Error.Message != "It broke." || body.Error.Param != nil {
			t.Errorf("%s: %d %+v", tc.code, status, body.Error)
		}
	}
	b := newCompletionBuilder("s", "chat", false)
	b.apply(eventbus.Of(eventbus.TypeStreamFinished, eventbus.Finished{Status: eventbus.StatusFailed, Reason: "content_filtered"}))
	if b.finishReason() != "content_filter" {
		t.Fatalf("a refused answer: finish %q", b.finishReason())
	}
}

func TestOpenAITurns(t *testing.T) {
	var msgs []openAIMessage
	if err := json.Unmarshal([]byte(`[
		{"role":"system","content":"be a pirate"},
		{"role":"user","content":[{"type":"text","text":"Hi "},{"type":"text","text":"there"}]},
		{"role":"assistant","content":"<think>greet</think>Hello.","tool_calls":[]},
		{"role":"tool","content":"{}","tool_call_id":"x"},
		{"role":"assistant","content":null},
		{"role":"user","content":"Why?"}]`), &msgs); err != nil {
		t.Fatal(err)
	}
	turns, question, perr := openAITurns(msgs, 100)
	if perr != nil {
		t.Fatal(perr.message)
	}
	var got []string
	for _, m := range turns {
		got = append(got, m.Role+": "+m.Content)
	}
	if question != "Why?" || strings.Join(got, "|") != "user: Hi there|assistant: Hello.|assistant: " {
		t.Fatalf("turns %q, question %q", got, question)
	}
	if _, _, perr := openAITurns(msgs, 3); perr == nil || perr.code != "content_too_long" || perr.param != "messages[5].content" {
		t.Fatalf("a long question: %+v", perr)
	}
}
