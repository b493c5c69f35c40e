package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

func TestAskStreamsThinkingAnswerAndEndAsTypedEvents(t *testing.T) {
	h := newHarness(t)
	chunks := append(providertest.ReasoningContent("Let me think about it.", 3),
		providertest.Answer("The answer is 42.", 4)...)
	h.provider.Enqueue(providertest.Script{Chunks: chunks,
		Usage: &providertest.Usage{PromptTokens: 11, CompletionTokens: 7, ReasoningTokens: 3}})
	session := h.createSession()

	s := h.ask(session, "What is the answer?")
	evs := s.all()
	checkSeqs(t, evs, 1)
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted || fin.MessageID != s.messageID() {
		t.Fatalf("finished = %+v", fin)
	}
	started := evs[0].Payload.(eventbus.StreamStarted)
	if started.MessageID != s.messageID() || started.SessionID != session || started.Mode != "chat" {
		t.Fatalf("stream.started = %+v", started)
	}
	var order []string
	for _, e := range evs {
		switch e.Type {
		case eventbus.TypeThinkingDelta, eventbus.TypeAnswerDelta, eventbus.TypeStage:
			continue
		}
		order = append(order, string(e.Type))
	}
	want := "stream.started model_call.started thinking.start thinking.end answer.start answer.end usage model_call.finished stream.finished"
	if got := strings.Join(order, " "); got != want {
		t.Fatalf("event order\n got %s\nwant %s", got, want)
	}
	if got := text(evs, eventbus.TypeThinkingDelta); got != "<think>Let me think about it.</think>" {
		t.Fatalf("thinking = %q", got)
	}
	if got := text(evs, eventbus.TypeAnswerDelta); got != "The answer is 42." {
		t.Fatalf("answer = %q", got)
	}
	for _, e := range evs {
		if u, ok := e.Payload.(eventbus.Usage); ok {
			if u.PromptTokens != 11 || u.CompletionTokens != 7 || u.ReasoningTokens != 3 {
				t.Fatalf("usage = %+v", u)
			}
		}
	}

	msg := h.message(session, s.messageID())
	if msg.Status != "completed" || msg.Content != "The answer is 42." || msg.Thinking != "Let me think about it." {
		t.Fatalf("saved message = %+v", msg)
	}
	if msg.Usage == nil || msg.Usage.CompletionTokens != 7 {
		t.Fatalf("saved usage = %+v", msg.Usage)
	}
	req := h.provider.Requests()[0]
	if req.Body["model"] != "fake-model" || req.Body["stream"] != true {
		t.Fatalf("provider request = %s", req.Raw)
	}
	msgs := req.Body["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	if last["role"] != "user" || last["content"] != "What is the answer?" {
		t.Fatalf("last prompt message = %v", last)
	}
}

func TestHistoryIsSentBackWithoutThinking(t *testing.T) {
	h := newHarness(t)
	h.provider.Enqueue(
		providertest.Script{Chunks: append(providertest.ReasoningContent("secret reasoning", 2), providertest.Answer("Paris.", 2)...)},
		providertest.Script{Chunks: providertest.Answer("About 2 million.", 2)},
	)
	session := h.createSession()
	h.ask(session, "Capital of France?").all()
	h.ask(session, "How many people live there?").all()
	req := h.provider.Requests()[1]
	if strings.Contains(string(req.Raw), "secret reasoning") || strings.Contains(string(req.Raw), "think>") {
		t.Fatalf("thinking was sent back to the model: %s", req.Raw)
	}
	var roles []string
	for _, m := range req.Body["messages"].([]any) {
		mm := m.(map[string]any)
		roles = append(roles, fmt.Sprint(mm["role"], ":", mm["content"]))
	}
	got := strings.Join(roles[1:], " | ") // after the system prompt
	want := "user:Capital of France? | assistant:Paris. | user:How many people live there?"
	if got != want {
		t.Fatalf("prompt\n got %s\nwant %s", got, want)
	}
}

func TestNonStreamingAnswerIsTheGatheredStream(t *testing.T) {
	h := newHarness(t)
	h.provider.Enqueue(providertest.Script{Chunks: append(providertest.ReasoningContent("hmm", 2), providertest.Answer("Gathered answer.", 3)...)})
	session := h.createSession()
	var msg struct {
		ID, Role, Content, Thinking, Status string
		Usage                               *eventbus.Usage
	}
	code := h.call("POST", "/api/v1/sessions/"+session+"/messages", `{"content":"q","stream":false}`, &msg)
	if code != http.StatusOK || msg.Status != "completed" || msg.Content != "Gathered answer." ||
		msg.Thinking != "hmm" || msg.Role != "assistant" || msg.Usage == nil {
		t.Fatalf("%d %+v", code, msg)
	}
	saved := h.message(session, msg.ID)
	if saved.Content != msg.Content || saved.Thinking != msg.Thinking || saved.Status != msg.Status {
		t.Fatalf("saved %+v differs from returned %+v", saved, msg)
	}
}

func TestDisconnectMidAnswerStillCompletesAndSaves(t *testing.T) {
	h := newHarness(t)
	gate := providertest.NewGate()
	answer := strings.Repeat("word ", 40)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer(answer, 40), Hold: gate, HoldAfter: 5})
	session := h.createSession()
	s := h.ask(session, "long question")
	s.until(isType(eventbus.TypeAnswerDelta))
	id := s.messageID()
	s.close() // the browser tab closes
	gate.Release()
	h.waitDone(id)
	msg := h.message(session, id)
	if msg.Status != "completed" || msg.Content != strings.TrimSpace(answer)+" " && msg.Content != answer {
		t.Fatalf("after disconnect: status %s content %q", msg.Status, msg.Content)
	}
	if h.provider.Aborts() != 0 {
		t.Fatal("the provider call was aborted by a client disconnect")
	}
}

func TestStopAbortsProviderSavesPartialAndEndsStopped(t *testing.T) {
	h := newHarness(t)
	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.Enqueue(providertest.Script{
		Chunks: append(providertest.ReasoningContent("thinking first", 2), providertest.Answer("one two three four five six", 6)...),
		Hold:   gate, HoldAfter: 5,
	})
	session := h.createSession()
	s := h.ask(session, "q")
	if err := gate.WaitReached(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	before := s.until(isType(eventbus.TypeAnswerDelta)) // some answer text has reached the client
	var stop struct{ Status, MessageID string }
	if code := h.call("POST", "/api/v1/streams/"+s.messageID()+"/stop", "", &stop); code != http.StatusAccepted {
		t.Fatalf("stop: %d", code)
	}
	if err := h.provider.WaitAbort(ctxTimeout(t)); err != nil {
		t.Fatalf("the provider never saw the abort: %v", err)
	}
	evs := append(before, s.all()...)
	fin := finished(t, evs)
	if fin.Status != eventbus.StatusStopped || fin.Reason != "user" {
		t.Fatalf("finished = %+v", fin)
	}
	if _, ok := firstError(evs); ok {
		t.Fatal("a stop must not produce an error event")
	}
	partial := text(evs, eventbus.TypeAnswerDelta)
	if partial == "" || !strings.HasPrefix("one two three four five six", partial) {
		t.Fatalf("streamed partial answer = %q", partial)
	}
	h.waitDone(s.messageID())
	msg := h.message(session, s.messageID())
	if msg.Status != "stopped" || msg.Content != partial || msg.Thinking != "thinking first" {
		t.Fatalf("saved = %+v, streamed partial %q", msg, partial)
	}
	// Stopping again: already finished.
	if code := h.call("POST", "/api/v1/streams/"+s.messageID()+"/stop", "", &stop); code != http.StatusOK || stop.Status != "stopped" {
		t.Fatalf("second stop: %d %+v", code, stop)
	}
	if code := h.call("POST", "/api/v1/streams/nope/stop", "", nil); code != http.StatusNotFound {
		t.Fatalf("stop unknown: %d", code)
	}
}

func TestStopWhileThinkingClosesTheThinkTag(t *testing.T) {
	h := newHarness(t)
	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Content("<think>still pondering deeply", 4), Hold: gate, HoldAfter: 3})
	session := h.createSession()
	s := h.ask(session, "q")
	_ = gate.WaitReached(ctxTimeout(t))
	before := s.until(isType(eventbus.TypeThinkingDelta)) // the thinking block is open on the client
	h.call("POST", "/api/v1/streams/"+s.messageID()+"/stop", "", nil)
	evs := append(before, s.all()...)
	if got := text(evs, eventbus.TypeThinkingDelta); !strings.HasPrefix(got, "<think>") || !strings.HasSuffix(got, "</think>") {
		t.Fatalf("thinking after stop = %q", got)
	}
	if finished(t, evs).Status != eventbus.StatusStopped {
		t.Fatal("not stopped")
	}
}

func TestProviderFailuresEndTheStreamAndSaveWhatArrived(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  providertest.Script
		code    string
		partial string
	}{
		{"http 500", providertest.Script{Status: 500}, "provider_error", ""},
		{"http 429", providertest.Script{Status: 429, Header: map[string]string{"Retry-After": "0"}}, "rate_limited", ""},
		{"http 401", providertest.Script{Status: 401, Error: providertest.ErrorObject{Message: "bad key sk-secret123"}}, "provider_auth", ""},
		{"mid-stream error", providertest.Script{Chunks: providertest.Content("partial answer here", 3),
			MidStreamError: &providertest.StreamError{After: 3, ErrorObject: providertest.ErrorObject{Message: "overloaded", Type: "server_error"}}},
			"provider_error", "partial answer here"},
		{"dropped connection", providertest.Script{Chunks: providertest.Content("cut short", 2), Drop: true}, "stream_truncated", "cut short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.provider.Enqueue(tc.script)
			session := h.createSession()
			s := h.ask(session, "q")
			evs := s.all()
			fin := finished(t, evs)
			if fin.Status != eventbus.StatusFailed {
				t.Fatalf("finished = %+v", fin)
			}
			e, ok := firstError(evs)
			if !ok || e.Code != tc.code || e.Message == "" || e.Stage != "generate" {
				t.Fatalf("error event = %+v (want code %s)", e, tc.code)
			}
			if strings.Contains(e.Message, "sk-secret") {
				t.Fatalf("error message leaks a secret: %q", e.Message)
			}
			if got := text(evs, eventbus.TypeAnswerDelta); got != tc.partial {
				t.Fatalf("streamed answer = %q, want %q", got, tc.partial)
			}
			h.waitDone(s.messageID())
			msg := h.message(session, s.messageID())
			if msg.Status != "failed" || msg.Content != tc.partial || msg.Error != e.Message {
				t.Fatalf("saved = %+v", msg)
			}
		})
	}
}

func TestRetryBeforeTheFirstChunk(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		m := c.Models["default"]
		m.Retries = intp(2)
		c.Models["default"] = m
	})
	h.provider.Enqueue(providertest.Script{Status: 503}, providertest.Script{Chunks: providertest.Answer("recovered", 2)})
	evs := h.ask(h.createSession(), "q").all()
	if finished(t, evs).Status != eventbus.StatusCompleted || text(evs, eventbus.TypeAnswerDelta) != "recovered" {
		t.Fatalf("events: %v", types(evs))
	}
	if n := len(h.provider.Requests()); n != 2 {
		t.Fatalf("provider saw %d requests, want 2", n)
	}
}

func TestFiftyConcurrentStreamsEachGetOnlyTheirOwnEventsInOrder(t *testing.T) {
	h := newHarness(t)
	h.provider.SetResponder(func(r providertest.Request) providertest.Script {
		msgs := r.Body["messages"].([]any)
		q := msgs[len(msgs)-1].(map[string]any)["content"].(string)
		return providertest.Script{Chunks: providertest.Answer("echo "+q+" "+strings.Repeat(q+" ", 10), 24), Delay: time.Millisecond}
	})
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			session := h.createSession()
			q := fmt.Sprintf("question-%02d", i)
			evs := h.ask(session, q).all()
			want := "echo " + q + " " + strings.Repeat(q+" ", 10)
			got := text(evs, eventbus.TypeAnswerDelta)
			switch {
			case got != want:
				errs <- fmt.Errorf("%s: answer %q", q, got)
			case evs[0].Payload.(eventbus.StreamStarted).SessionID != session:
				errs <- fmt.Errorf("%s: another session's stream", q)
			default:
				for j, e := range evs {
					if e.Seq != int64(j+1) || e.StreamID != evs[0].StreamID {
						errs <- fmt.Errorf("%s: event %d has seq %d stream %s", q, j, e.Seq, e.StreamID)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
