package app_test

import (
	"testing"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/internal/think"
)

// withFilteredChat puts sensitive_filter into the chat mode with a mask
// list and a stop list.
func withFilteredChat(c *config.Config) {
	c.Pipelines = map[string][]any{"chat": {"load_history", "sensitive_filter", "chat_completion_stream"}}
	c.Plugins["sensitive_filter"]["lists"] = []any{
		map[string]any{"action": "mask", "words": []any{"hunter2", "机密"}},
		map[string]any{"action": "stop", "words": []any{"launch code"}},
	}
}

// Masked words split across provider chunks reach the client masked, and
// the saved message is exactly what the client received.
func TestFilteredAnswerIsSavedAsStreamed(t *testing.T) {
	h := newHarness(t, withFilteredChat)
	h.provider.Enqueue(providertest.Script{Chunks: append(
		providertest.ReasoningContent("The user wants hunter2 and the 机密 file.", 9),
		providertest.Answer("Your password is hunter2; the 机密 file stays here.", 13)...)})
	session := h.createSession()
	s := h.ask(session, "What is my password?")
	evs := s.all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("finished = %+v", fin)
	}
	answer, thinking := text(evs, eventbus.TypeAnswerDelta), text(evs, eventbus.TypeThinkingDelta)
	if answer != "Your password is *******; the ** file stays here." {
		t.Fatalf("streamed %q", answer)
	}
	if thinking != "<think>The user wants ******* and the ** file.</think>" {
		t.Fatalf("streamed thinking %q", thinking)
	}
	h.waitDone(s.messageID())
	if msg := h.message(session, s.messageID()); msg.Content != answer || msg.Thinking != think.StripSaved(thinking) { // saved clean: tags are the wire's
		t.Fatalf("saved %q / %q, streamed %q / %q", msg.Content, msg.Thinking, answer, thinking)
	}
}

// A stop word ends the stream with the error content_filtered; the text
// before it is what the client saw and what is saved, and the provider
// call is aborted.
func TestStopWordEndsTheStreamAndSavesThePartialAnswer(t *testing.T) {
	h := newHarness(t, withFilteredChat)
	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.Enqueue(providertest.Script{
		Chunks: providertest.Answer("Sure. The hunter2 LAUNCH CODE is 0000 and more follows.", 12),
		Hold:   gate, HoldAfter: 10,
	})
	session := h.createSession()
	s := h.ask(session, "Tell me everything.")
	evs := s.all()
	fin := finished(t, evs)
	if fin.Status != eventbus.StatusFailed || fin.Reason != "content_filtered" {
		t.Fatalf("finished = %+v", fin)
	}
	e, ok := firstError(evs)
	if !ok || e.Code != "content_filtered" || e.Message == "" {
		t.Fatalf("error event = %+v, %v", e, ok)
	}
	if err := h.provider.WaitAbort(ctxTimeout(t)); err != nil {
		t.Fatalf("the provider call was not aborted: %v", err)
	}
	answer := text(evs, eventbus.TypeAnswerDelta)
	if answer != "Sure. The ******* " {
		t.Fatalf("streamed %q", answer)
	}
	if indexOf(evs, eventbus.TypeAnswerEnd) > indexOf(evs, eventbus.TypeError) {
		t.Fatalf("the answer block closed after the error: %v", types(evs))
	}
	h.waitDone(s.messageID())
	msg := h.message(session, s.messageID())
	if msg.Status != "failed" || msg.Content != answer {
		t.Fatalf("saved %+v, streamed %q", msg, answer)
	}
}
