package app_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// withOtherModel adds a model "other" on the fake provider, told apart
// from "default" by the model id it sends.
func withOtherModel(c *config.Config) {
	m := c.Models["default"]
	m.Model = "other-model"
	c.Models["other"] = m
}

// scriptsByModel answers each provider request with the script of the
// model id it names, so that concurrent calls get the right one.
func scriptsByModel(h *harness, scripts map[string]providertest.Script) {
	h.provider.SetResponder(func(r providertest.Request) providertest.Script {
		return scripts[r.Body["model"].(string)]
	})
}

// compare asks a question answered by models side by side.
func (h *harness) compare(session, question string, models ...string) *sse {
	h.t.Helper()
	body, _ := json.Marshal(map[string]any{"content": question, "models": models})
	s := h.open("POST", "/api/v1/sessions/"+session+"/messages", string(body))
	if s.resp.StatusCode != http.StatusOK {
		h.t.Fatalf("compare: %d", s.resp.StatusCode)
	}
	return s
}

// byModel splits the events after stream.started by placement.model and
// fails on an event that carries none.
func byModel(t *testing.T, evs []event) map[string][]event {
	t.Helper()
	out := map[string][]event{}
	for _, e := range evs[1 : len(evs)-1] {
		if e.Placement == nil || e.Placement.Model == "" {
			t.Fatalf("event %d (%s) has no placement.model", e.Seq, e.Type)
		}
		out[e.Placement.Model] = append(out[e.Placement.Model], e)
	}
	return out
}

// Two models answer one question at once: every event names its model,
// one model failing mid-stream leaves the other answering, and each
// answer is saved as its own message, exactly once.
func TestTwoModelsSideBySideOneFailingMidStream(t *testing.T) {
	h := newHarness(t, withOtherModel)
	gate := providertest.NewGate()
	defer gate.Release()
	scriptsByModel(h, map[string]providertest.Script{
		"fake-model": {Chunks: providertest.Answer("Answer from default.", 4), Hold: gate, HoldAfter: 1},
		"other-model": {Chunks: providertest.Content("Other starts", 2),
			MidStreamError: &providertest.StreamError{After: 2, ErrorObject: providertest.ErrorObject{
				Message: "upstream overloaded", Type: "server_error"}}},
	})
	session := h.createSession()
	s := h.compare(session, "Which is better?", "default", "other")

	// The other model fails while the default one is held mid-answer.
	early := s.until(func(e event) bool { return e.Type == eventbus.TypeError })
	if p := early[len(early)-1].Placement; p == nil || p.Model != "other" {
		t.Fatalf("error placed at %+v", p)
	}
	gate.Release()
	evs := append(early, s.all()...)
	checkSeqs(t, evs, 1)

	started := evs[0].Payload.(eventbus.StreamStarted)
	if len(started.Models) != 2 || started.Models[0].Model != "default" || started.Models[1].Model != "other" ||
		started.Models[0].MessageID != s.messageID() || started.MessageID != s.messageID() {
		t.Fatalf("stream.started = %+v", started)
	}
	fin := finished(t, evs)
	if fin.Status != eventbus.StatusCompleted || fin.Reason != "some_models_failed" || fin.MessageID != s.messageID() {
		t.Fatalf("finished = %+v", fin)
	}
	parts := byModel(t, evs)
	if got := text(parts["default"], eventbus.TypeAnswerDelta); got != "Answer from default." {
		t.Fatalf("default answered %q", got)
	}
	if got := text(parts["other"], eventbus.TypeAnswerDelta); got != "Other starts" {
		t.Fatalf("other answered %q", got)
	}
	for model, want := range map[string][]string{
		"default": {"answer.start", "answer.end", "usage"},
		"other":   {"answer.start", "answer.end", "error"},
	} {
		var got []string
		for _, e := range parts[model] {
			if slices.Contains(want, string(e.Type)) {
				got = append(got, string(e.Type))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: events %v, want %v", model, got, want)
		}
	}

	h.waitDone(s.messageID())
	msgs := h.messages(session)
	if len(msgs) != 3 || msgs[0].Role != "user" || msgs[1].ID != started.Models[0].MessageID || msgs[2].ID != started.Models[1].MessageID {
		t.Fatalf("saved messages = %+v", msgs)
	}
	if msgs[1].Status != "completed" || msgs[1].Content != "Answer from default." {
		t.Fatalf("default's message = %+v", msgs[1])
	}
	if msgs[2].Status != "failed" || msgs[2].Content != "Other starts" || msgs[2].Error == "" {
		t.Fatalf("other's message = %+v", msgs[2])
	}
	if n := len(h.provider.Requests()); n != 2 {
		t.Fatalf("%d provider requests", n)
	}
}

// A stop stops every model: both provider calls are aborted and both
// answers are saved as stopped.
func TestStopStopsEveryModelSideBySide(t *testing.T) {
	h := newHarness(t, withOtherModel)
	gate := providertest.NewGate()
	defer gate.Release()
	held := providertest.Script{Chunks: providertest.Answer("never finished here", 4), Hold: gate, HoldAfter: 2}
	scriptsByModel(h, map[string]providertest.Script{"fake-model": held, "other-model": held})
	session := h.createSession()
	s := h.compare(session, "Q", "default", "other")
	if err := h.provider.WaitChunks(ctxTimeout(t), 4); err != nil { // two chunks of each
		t.Fatal(err)
	}
	// Stop once both models' first answer text has reached the client.
	seen := map[string]bool{}
	before := s.until(func(e event) bool {
		if e.Type == eventbus.TypeAnswerDelta && e.Placement != nil {
			seen[e.Placement.Model] = true
		}
		return seen["default"] && seen["other"]
	})
	if code := h.call("POST", "/api/v1/streams/"+s.messageID()+"/stop", "", nil); code != http.StatusAccepted {
		t.Fatalf("stop: %d", code)
	}
	for range 2 {
		if err := h.provider.WaitAbort(ctxTimeout(t)); err != nil {
			t.Fatalf("a model's call was not aborted: %v", err)
		}
	}
	evs := append(before, s.all()...)
	checkSeqs(t, evs, 1)
	if fin := finished(t, evs); fin.Status != eventbus.StatusStopped {
		t.Fatalf("finished = %+v", fin)
	}
	parts := byModel(t, evs)
	for _, model := range []string{"default", "other"} {
		if got := text(parts[model], eventbus.TypeAnswerDelta); got != "never finished here"[:len(got)] || got == "" {
			t.Fatalf("%s streamed %q", model, got)
		}
	}
	h.waitDone(s.messageID())
	for _, m := range h.messages(session)[1:] {
		if m.Status != "stopped" || m.Content == "" {
			t.Fatalf("saved = %+v", m)
		}
	}
}

// A request naming models is checked before anything is saved.
func TestSideBySideRequestsAreValidated(t *testing.T) {
	h := newHarness(t, withOtherModel)
	session := h.createSession()
	for _, tc := range []struct {
		body, code string
	}{
		{`{"content":"q","models":["default"]}`, "invalid_models"},
		{`{"content":"q","models":["default","other","default"]}`, "invalid_models"},
		{`{"content":"q","models":["default","a","b","c"]}`, "invalid_models"},
		{`{"content":"q","models":["default","gpt-9"]}`, "unknown_model"},
		{`{"content":"q","models":["default","other"],"stream":false}`, "stream_required"},
	} {
		var e struct {
			Error struct{ Code, Message string }
		}
		if status := h.call("POST", "/api/v1/sessions/"+session+"/messages", tc.body, &e); status != http.StatusBadRequest || e.Error.Code != tc.code {
			t.Errorf("%s: %d %+v, want 400 %s", tc.body, status, e, tc.code)
		}
	}
	if msgs := h.messages(session); len(msgs) != 0 {
		t.Fatalf("a refused request saved %d messages", len(msgs))
	}
}
