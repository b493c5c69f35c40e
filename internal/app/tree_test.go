package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// branch lists the session's current branch (leaf "" ) or the branch of
// leaf, as GET /api/v1/sessions/{id}/messages returns it.
func (h *harness) branch(session, leaf string) []handler.MessageJSON {
	h.t.Helper()
	path := "/api/v1/sessions/" + session + "/messages"
	if leaf != "" {
		path += "?leaf=" + leaf
	}
	var out struct{ Messages []handler.MessageJSON }
	if code := h.call("GET", path, "", &out); code != http.StatusOK {
		h.t.Fatalf("GET %s: %d", path, code)
	}
	return out.Messages
}

func contents(msgs []handler.MessageJSON) string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Content)
	}
	return strings.Join(out, " | ")
}

// prompt is the conversation the provider's last request carried, as
// role:content, system prompt left out.
func (h *harness) prompt() []string {
	h.t.Helper()
	reqs := h.provider.Requests()
	if len(reqs) == 0 {
		h.t.Fatal("the provider got no request")
	}
	var out []string
	for _, m := range reqs[len(reqs)-1].Body["messages"].([]any) {
		msg := m.(map[string]any)
		if msg["role"] == "system" {
			continue
		}
		out = append(out, fmt.Sprint(msg["role"], ":", msg["content"]))
	}
	return out
}

// wantAlternating fails unless the prompt goes user, assistant, user, …
// and ends with the question.
func wantAlternating(t *testing.T, prompt []string) {
	t.Helper()
	for i, m := range prompt {
		want := "user:"
		if i%2 == 1 {
			want = "assistant:"
		}
		if !strings.HasPrefix(m, want) {
			t.Fatalf("prompt %q: message %d is not %s", prompt, i, want)
		}
	}
	if len(prompt)%2 != 1 {
		t.Fatalf("prompt %q does not end with the question", prompt)
	}
}

// regenerate posts to the regenerate endpoint and returns the stream.
func (h *harness) regenerate(id, body string) *sse {
	h.t.Helper()
	s := h.open("POST", "/api/v1/messages/"+id+"/regenerate", body)
	if s.resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(s.resp.Body)
		h.t.Fatalf("regenerate %s: %d %s", id, s.resp.StatusCode, data)
	}
	return s
}

func started(t *testing.T, evs []event) eventbus.StreamStarted {
	t.Helper()
	if len(evs) == 0 || evs[0].Type != eventbus.TypeStreamStarted {
		t.Fatalf("first event is not stream.started: %v", types(evs))
	}
	return evs[0].Payload.(eventbus.StreamStarted)
}

// Regenerating a completed, a failed and a stopped answer: each new
// answer streams like any other, is a sibling of the old one and becomes
// the current leaf, and the next prompt holds only the branch shown.
func TestRegenerateAfterCompletedFailedAndStoppedAnswers(t *testing.T) {
	h := newHarness(t)
	session := h.createSession()

	// Completed.
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Paris.", 2)})
	first := h.ask(session, "Capital of France?")
	first.all()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("It is Paris.", 2)})
	evs := h.regenerate(first.messageID(), "").all()
	again := started(t, evs)
	if again.MessageID == "" || again.MessageID == first.messageID() || again.SessionID != session {
		t.Fatalf("stream.started = %+v", again)
	}
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted || text(evs, eventbus.TypeAnswerDelta) != "It is Paris." {
		t.Fatalf("regenerated: %+v %q", fin, text(evs, eventbus.TypeAnswerDelta))
	}
	if got := h.prompt(); !slices.Equal(got, []string{"user:Capital of France?"}) {
		t.Fatalf("regenerating sent %q; want the question alone", got)
	}
	b := h.branch(session, "")
	if contents(b) != "Capital of France? | It is Paris." {
		t.Fatalf("branch after regenerate = %q", contents(b))
	}
	if !slices.Equal(b[1].SiblingIDs, []string{first.messageID(), again.MessageID}) || *b[1].ParentID != b[0].ID ||
		b[1].Model == nil || *b[1].Model != "default" {
		t.Fatalf("regenerated answer = %+v", b[1])
	}

	// Failed, with no text: regenerated; then a follow-up holds only
	// the regenerated answer.
	h.provider.Enqueue(providertest.Script{Status: http.StatusInternalServerError})
	failed := h.ask(session, "And of Italy?")
	if fin := finished(t, failed.all()); fin.Status != eventbus.StatusFailed {
		t.Fatalf("failed answer finished %+v", fin)
	}
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Rome.", 1)})
	if fin := finished(t, h.regenerate(failed.messageID(), `{"mode":"chat"}`).all()); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("regenerated failed answer: %+v", fin)
	}
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Berlin.", 1)})
	h.ask(session, "And Germany?").all()
	if got, want := h.prompt(), []string{"user:Capital of France?", "assistant:It is Paris.", "user:And of Italy?",
		"assistant:Rome.", "user:And Germany?"}; !slices.Equal(got, want) {
		t.Fatalf("prompt = %q\nwant %q", got, want)
	}

	// Stopped mid-answer: regenerated with "stream": false.
	gate := providertest.NewGate()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Madrid is the cap", 3), Hold: gate, HoldAfter: 1})
	stopped := h.ask(session, "And Spain?")
	stopped.until(isType(eventbus.TypeAnswerDelta))
	if code := h.call("POST", "/api/v1/streams/"+stopped.messageID()+"/stop", "", nil); code != http.StatusAccepted && code != http.StatusOK {
		t.Fatalf("stop: %d", code)
	}
	if fin := finished(t, stopped.all()); fin.Status != eventbus.StatusStopped {
		t.Fatalf("stopped answer finished %+v", fin)
	}
	h.waitDone(stopped.messageID())
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Madrid.", 1)})
	var msg handler.MessageJSON
	if code := h.call("POST", "/api/v1/messages/"+stopped.messageID()+"/regenerate", `{"stream":false}`, &msg); code != http.StatusOK {
		t.Fatalf("regenerate, not streamed: %d", code)
	}
	if msg.Status != "completed" || msg.Content != "Madrid." || len(msg.SiblingIDs) != 2 ||
		msg.SiblingIDs[0] != stopped.messageID() || msg.Model == nil || *msg.Model != "default" {
		t.Fatalf("regenerated, not streamed = %+v", msg)
	}
	wantAlternating(t, h.prompt())
	if old := h.message(session, stopped.messageID()); old.Status != "stopped" || old.Content == "" {
		t.Fatalf("the stopped answer changed: %+v", old)
	}
}

// Editing a question starts a branch; switching the current leaf back
// and forth changes what is listed and what the next prompt holds.
func TestEditThenSwitchBranchesBackAndForth(t *testing.T) {
	h := newHarness(t)
	session := h.createSession()
	for _, a := range []string{"A1", "A2"} {
		h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer(a, 1)})
	}
	h.ask(session, "Q1").all()
	h.ask(session, "Q2").all()
	orig := h.branch(session, "")
	if contents(orig) != "Q1 | A1 | Q2 | A2" {
		t.Fatalf("branch = %q", contents(orig))
	}
	a1, q2, a2 := orig[1].ID, orig[2].ID, orig[3].ID
	if orig[0].ParentID != nil || *orig[2].ParentID != a1 || !slices.Equal(orig[2].SiblingIDs, []string{q2}) {
		t.Fatalf("linear branch = %+v", orig)
	}

	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("A2 edited", 1)})
	edit := h.open("POST", "/api/v1/sessions/"+session+"/messages", `{"content":"Q2 edited","parent_id":"`+a1+`"}`)
	evs := edit.all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("edit finished %+v", fin)
	}
	if got := h.prompt(); !slices.Equal(got, []string{"user:Q1", "assistant:A1", "user:Q2 edited"}) {
		t.Fatalf("prompt after the edit = %q", got)
	}
	edited := h.branch(session, "")
	if contents(edited) != "Q1 | A1 | Q2 edited | A2 edited" || !slices.Equal(edited[2].SiblingIDs, []string{q2, edited[2].ID}) {
		t.Fatalf("branch after the edit = %q %+v", contents(edited), edited[2])
	}

	for range 2 {
		// Back: a question that has replies stands for its newest line.
		var sess handler.SessionJSON
		if code := h.call("PATCH", "/api/v1/sessions/"+session, `{"current_leaf":"`+q2+`"}`, &sess); code != http.StatusOK ||
			sess.CurrentLeaf == nil || *sess.CurrentLeaf != a2 {
			t.Fatalf("PATCH current_leaf = %d %+v", code, sess)
		}
		if got := contents(h.branch(session, "")); got != "Q1 | A1 | Q2 | A2" {
			t.Fatalf("after switching back: %q", got)
		}
		// And forth.
		if code := h.call("PATCH", "/api/v1/sessions/"+session, `{"current_leaf":"`+edited[2].ID+`"}`, &sess); code != http.StatusOK {
			t.Fatalf("PATCH current_leaf: %d", code)
		}
		if got := contents(h.branch(session, "")); got != "Q1 | A1 | Q2 edited | A2 edited" {
			t.Fatalf("after switching forth: %q", got)
		}
	}
	if got := contents(h.branch(session, a2)); got != "Q1 | A1 | Q2 | A2" {
		t.Fatalf("?leaf=%s: %q", a2, got)
	}
	// Asking follows the branch shown; the other branch is not sent.
	h.call("PATCH", "/api/v1/sessions/"+session, `{"current_leaf":"`+a2+`"}`, nil)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("A3", 1)})
	h.ask(session, "Q3").all()
	if got, want := h.prompt(), []string{"user:Q1", "assistant:A1", "user:Q2", "assistant:A2", "user:Q3"}; !slices.Equal(got, want) {
		t.Fatalf("prompt = %q, want %q", got, want)
	}
	// Editing the first question (parent null) starts the conversation over.
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("B1", 1)})
	h.open("POST", "/api/v1/sessions/"+session+"/messages", `{"content":"Q1 again","parent_id":null}`).all()
	if got := h.prompt(); !slices.Equal(got, []string{"user:Q1 again"}) {
		t.Fatalf("prompt of a new first question = %q", got)
	}
	restart := h.branch(session, "")
	if contents(restart) != "Q1 again | B1" || restart[0].ParentID != nil || len(restart[0].SiblingIDs) != 2 {
		t.Fatalf("branch after a new first question = %q %+v", contents(restart), restart[0])
	}
	if n := len(h.messages(session)); n != 10 {
		t.Fatalf("%d messages in all branches, want 10", n)
	}
}

// A failed answer with no text and a partial failed answer stay in the
// prompt, marked, so roles alternate.
func TestFailedAnswersAreMarkedInTheNextPrompt(t *testing.T) {
	h := newHarness(t)
	session := h.createSession()
	h.provider.Enqueue(providertest.Script{Status: http.StatusInternalServerError},
		providertest.Script{Chunks: providertest.Answer("Half an ans", 2),
			MidStreamError: &providertest.StreamError{After: 2, ErrorObject: providertest.ErrorObject{Message: "overloaded"}}},
		providertest.Script{Chunks: providertest.Answer("ok", 1)})
	for _, q := range []string{"Q1", "Q2", "Q3"} {
		h.ask(session, q).all()
	}
	got := h.prompt()
	wantAlternating(t, got)
	if len(got) != 5 || !strings.Contains(got[1], "No answer") || !strings.HasPrefix(got[3], "assistant:Half an ans") ||
		!strings.Contains(got[3], "incomplete") {
		t.Fatalf("prompt = %q", got)
	}
}

// POST /api/v1/messages opens the session with its first question.
func TestFirstQuestionOpensItsSession(t *testing.T) {
	h := newHarness(t)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Hello!", 1)})
	s := h.open("POST", "/api/v1/messages", `{"content":"Hi","title":"Greetings"}`)
	evs := s.all()
	st := started(t, evs)
	if st.SessionID == "" || st.MessageID != s.messageID() {
		t.Fatalf("stream.started = %+v", st)
	}
	var sess handler.SessionJSON
	if code := h.call("GET", "/api/v1/sessions/"+st.SessionID, "", &sess); code != http.StatusOK ||
		sess.Title != "Greetings" || sess.TitleSource != "user" || sess.CurrentLeaf == nil || *sess.CurrentLeaf != st.MessageID {
		t.Fatalf("session = %d %+v", code, sess)
	}
	if got := contents(h.branch(st.SessionID, "")); got != "Hi | Hello!" {
		t.Fatalf("branch = %q", got)
	}
}

// PATCH renames (a user title) and changes the mode.
func TestPatchSessionRenamesAndChangesMode(t *testing.T) {
	h := newHarness(t)
	session := h.createSession()
	var sess handler.SessionJSON
	if code := h.call("PATCH", "/api/v1/sessions/"+session, `{"title":"  Trip plans ","mode":"rag"}`, &sess); code != http.StatusOK ||
		sess.Title != "Trip plans" || sess.TitleSource != "user" || sess.Mode != "rag" {
		t.Fatalf("PATCH = %d %+v", code, sess)
	}
	if code := h.call("GET", "/api/v1/sessions/"+session, "", &sess); code != http.StatusOK || sess.Title != "Trip plans" || sess.Mode != "rag" {
		t.Fatalf("GET after PATCH = %d %+v", code, sess)
	}
}

// Tool calls with their arguments, results, status and duration, the
// stage timings, the references cited and the model are saved with the
// answer and returned once the stream's replay window has passed.
func TestToolActivityAndModelAreReturnedAfterTheReplayWindow(t *testing.T) {
	h := newHarness(t, agentMode(nil), func(c *config.Config) { c.Stream.Retention = 50 * time.Millisecond })
	h.addDocument("Starter care", sourdough)
	h.provider.Enqueue(
		providertest.Script{Chunks: append(providertest.ToolCall(0, "call_a", "knowledge_search", `{"query":"starter feeding"}`, 2),
			providertest.Chunk{FinishReason: "tool_calls"})},
		providertest.Script{Chunks: providertest.Answer("Feed it twice a day [1].", 2)},
	)
	session := h.createSession()
	s := h.ask(session, "How often do I feed my starter?")
	s.all()
	h.waitDone(s.messageID())
	deadline := time.Now().Add(5 * time.Second)
	for {
		// An expired stream tells the client to reload the saved message.
		replay := h.open("GET", "/api/v1/streams/"+s.messageID(), "").all()
		if len(replay) > 0 && replay[0].Type == eventbus.TypeResyncRequired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream is still replayable: %v", types(replay))
		}
		time.Sleep(20 * time.Millisecond)
	}
	msg := h.message(session, s.messageID())
	if msg.Model == nil || *msg.Model != "default" {
		t.Fatalf("model = %v", msg.Model)
	}
	if len(msg.ToolCalls) != 1 {
		t.Fatalf("tool calls = %+v", msg.ToolCalls)
	}
	tc := msg.ToolCalls[0]
	if tc.ID != "call_a" || tc.Name != "knowledge_search" || tc.Arguments != `{"query":"starter feeding"}` ||
		tc.Status != eventbus.ToolCompleted || !strings.Contains(tc.Output, "Starter care") || tc.Turn != 1 || tc.DurationMS < 0 {
		t.Fatalf("tool call = %+v", tc)
	}
	var stages []string
	for _, st := range msg.Stages {
		stages = append(stages, st.Name+":"+st.Status)
	}
	if !slices.Contains(stages, "generate:finished") || !slices.Contains(stages, "load_history:finished") {
		t.Fatalf("stages = %v", stages)
	}
	if !slices.Equal(msg.Cited, []int{1}) {
		t.Fatalf("cited = %v", msg.Cited)
	}
	raw, _ := json.Marshal(msg)
	if !strings.Contains(string(raw), `"duration_ms"`) {
		t.Fatalf("message JSON lacks the tool call's duration: %s", raw)
	}
}

// errorCode reads a JSON error answer's code.
func (h *harness) errorCode(method, path, body string) (int, string) {
	h.t.Helper()
	var out struct {
		Error struct{ Code, Message string }
	}
	code := h.call(method, path, body, &out)
	if out.Error.Message == "" {
		h.t.Errorf("%s %s: no error message in the answer", method, path)
	}
	return code, out.Error.Code
}

// Every bad tree request gets a clear JSON 4xx and saves nothing.
func TestTreeRequestsWithBadInputAreRefusedAndSaveNothing(t *testing.T) {
	h := newHarness(t, withTwoTenants)
	acme, globex := h.as(acmeKey), h.as(betaKey)
	h.provider.SetDefault(providertest.Script{Chunks: providertest.Answer("ok", 1)})
	mine, other := acme.createSession(), acme.createSession()
	acme.ask(mine, "Q1").all()
	acme.ask(other, "elsewhere").all()
	foreign := globex.createSession()
	globex.ask(foreign, "theirs").all()
	b := acme.branch(mine, "")
	q1, a1 := b[0].ID, b[1].ID
	otherAnswer := acme.branch(other, "")[1].ID
	theirAnswer := globex.branch(foreign, "")[1].ID
	requests := len(h.provider.Requests())
	var sessionsBefore struct{ Sessions []handler.SessionJSON }
	acme.call("GET", "/api/v1/sessions", "", &sessionsBefore)

	for _, tc := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/api/v1/messages/" + q1 + "/regenerate", "", http.StatusBadRequest, "not_an_answer"},
		{"POST", "/api/v1/messages/" + theirAnswer + "/regenerate", "", http.StatusNotFound, "message_not_found"},
		{"POST", "/api/v1/messages/nope/regenerate", "", http.StatusNotFound, "message_not_found"},
		{"POST", "/api/v1/messages/" + a1 + "/regenerate", `{"mode":"nope"}`, http.StatusBadRequest, "unknown_mode"},
		{"POST", "/api/v1/messages/" + a1 + "/regenerate", `{"bogus":1}`, http.StatusBadRequest, "unknown_field"},
		{"POST", "/api/v1/sessions/" + mine + "/messages", `{"content":"x","parent_id":"` + otherAnswer + `"}`, http.StatusBadRequest, "invalid_parent"},
		{"POST", "/api/v1/sessions/" + mine + "/messages", `{"content":"x","parent_id":"` + theirAnswer + `"}`, http.StatusBadRequest, "invalid_parent"},
		{"POST", "/api/v1/sessions/" + mine + "/messages", `{"content":"x","parent_id":"missing"}`, http.StatusBadRequest, "invalid_parent"},
		{"POST", "/api/v1/sessions/" + mine + "/messages", `{"content":"x","parent_id":"` + q1 + `"}`, http.StatusBadRequest, "invalid_parent"},
		{"POST", "/api/v1/sessions/" + mine + "/messages", `{"content":"x","parent_id":""}`, http.StatusBadRequest, "invalid_parent"},
		{"POST", "/api/v1/sessions/" + mine + "/messages", `{"content":"x","title":"t"}`, http.StatusBadRequest, "unexpected_title"},
		{"POST", "/api/v1/messages", `{"content":"x","parent_id":"` + a1 + `"}`, http.StatusBadRequest, "unexpected_parent"},
		{"POST", "/api/v1/messages", `{"content":""}`, http.StatusBadRequest, "empty_content"},
		{"POST", "/api/v1/messages", `{"content":"x","mode":"nope"}`, http.StatusBadRequest, "unknown_mode"},
		{"POST", "/api/v1/messages", `{"content":"x","title":"` + strings.Repeat("t", 1000) + `"}`, http.StatusBadRequest, "title_too_long"},
		{"PATCH", "/api/v1/sessions/" + mine, `{"current_leaf":"` + otherAnswer + `"}`, http.StatusNotFound, "message_not_found"},
		{"PATCH", "/api/v1/sessions/" + mine, `{"current_leaf":"missing"}`, http.StatusNotFound, "message_not_found"},
		{"PATCH", "/api/v1/sessions/" + mine, `{}`, http.StatusBadRequest, "nothing_to_change"},
		{"PATCH", "/api/v1/sessions/" + mine, `{"title":"  "}`, http.StatusBadRequest, "empty_title"},
		{"PATCH", "/api/v1/sessions/" + mine, `{"title":"ok","mode":"nope"}`, http.StatusBadRequest, "unknown_mode"},
		{"PATCH", "/api/v1/sessions/" + foreign, `{"title":"mine now"}`, http.StatusNotFound, "session_not_found"},
		{"GET", "/api/v1/sessions/" + mine + "/messages?leaf=" + otherAnswer, "", http.StatusNotFound, "message_not_found"},
	} {
		if status, code := acme.errorCode(tc.method, tc.path, tc.body); status != tc.status || code != tc.code {
			t.Errorf("%s %s %s = %d %s, want %d %s", tc.method, tc.path, tc.body, status, code, tc.status, tc.code)
		}
	}

	if n := len(h.provider.Requests()); n != requests {
		t.Errorf("refused requests reached the provider: %d requests, had %d", n, requests)
	}
	if got := contents(acme.messages(mine)); got != "Q1 | ok" {
		t.Errorf("messages after refused requests = %q", got)
	}
	var sess handler.SessionJSON
	acme.call("GET", "/api/v1/sessions/"+mine, "", &sess)
	if sess.Title != "test" || sess.CurrentLeaf == nil || *sess.CurrentLeaf != a1 {
		t.Errorf("session after refused requests = %+v", sess)
	}
	var sessionsAfter struct{ Sessions []handler.SessionJSON }
	acme.call("GET", "/api/v1/sessions", "", &sessionsAfter)
	if len(sessionsAfter.Sessions) != len(sessionsBefore.Sessions) {
		t.Errorf("refused requests created sessions: %d, had %d", len(sessionsAfter.Sessions), len(sessionsBefore.Sessions))
	}
	var theirs handler.SessionJSON
	globex.call("GET", "/api/v1/sessions/"+foreign, "", &theirs)
	if theirs.Title != "test" {
		t.Errorf("another tenant's session changed: %+v", theirs)
	}
}

// With load_history's tool_calls on, an agent answer's tool calls and
// results go back to the model in the provider's format on the next
// question: an assistant message with tool_calls, then tool messages.
func TestAgentToolCallsAreSentBackInTheNextPromptWhenConfigured(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint("tool_calls=", on), func(t *testing.T) {
			h := newHarness(t, agentMode(nil), func(c *config.Config) { c.Plugins["load_history"]["tool_calls"] = on })
			h.addDocument("Starter care", sourdough)
			h.provider.Enqueue(
				providertest.Script{Chunks: append(providertest.ToolCall(0, "call_a", "knowledge_search", `{"query":"feeding"}`, 2),
					providertest.Chunk{FinishReason: "tool_calls"})},
				providertest.Script{Chunks: providertest.Answer("Twice a day [1].", 1)},
				providertest.Script{Chunks: providertest.Answer("Rye works.", 1)},
			)
			session := h.createSession()
			h.ask(session, "How often do I feed it?").all()
			h.ask(session, "Which flour?").all()
			reqs := h.provider.Requests()
			var roles []string
			var asked []any
			for _, m := range reqs[len(reqs)-1].Body["messages"].([]any) {
				msg := m.(map[string]any)
				if msg["role"] == "system" {
					continue
				}
				roles = append(roles, fmt.Sprint(msg["role"]))
				if calls, ok := msg["tool_calls"].([]any); ok {
					asked = append(asked, calls...)
				}
			}
			want := []string{"user", "assistant", "user"}
			if on {
				want = []string{"user", "assistant", "tool", "assistant", "user"}
			}
			if !slices.Equal(roles, want) {
				t.Fatalf("roles = %v, want %v", roles, want)
			}
			if got := toolMessages(reqs[len(reqs)-1].Body); on != (len(got) == 1 && strings.HasPrefix(got[0], "call_a=")) {
				t.Fatalf("tool messages = %v", got)
			}
			if on && (len(asked) != 1 || !strings.Contains(fmt.Sprint(asked[0]), "knowledge_search")) {
				t.Fatalf("tool calls sent back = %v", asked)
			}
		})
	}
}
