package app_test

import (
	"database/sql"
	"io"
	"net/http"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // to count the history rows directly

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// historyRows counts the rows of the history tables in the server's
// SQLite file, read directly rather than through the API.
func (h *harness) historyRows() (sessions, messages int) {
	h.t.Helper()
	db, err := sql.Open("sqlite", h.app.Config().Storage.SQLite.Path)
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	for table, n := range map[string]*int{"sessions": &sessions, "messages": &messages} {
		if err := db.QueryRow("SELECT count(*) FROM " + table).Scan(n); err != nil {
			h.t.Fatalf("count %s: %v", table, err)
		}
	}
	return sessions, messages
}

func (h *harness) chatStateless(body string) *sse {
	h.t.Helper()
	s := h.open("POST", "/api/v1/chat", body)
	if s.resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(s.resp.Body)
		h.t.Fatalf("POST /api/v1/chat: %d %s", s.resp.StatusCode, data)
	}
	return s
}

// providerMessages is the role: content list of a provider request.
func providerMessages(r providertest.Request) []string {
	var out []string
	for _, m := range r.Body["messages"].([]any) {
		mm := m.(map[string]any)
		c, _ := mm["content"].(string)
		out = append(out, mm["role"].(string)+": "+c)
	}
	return out
}

func TestStatelessChatStreamsTheAnswerAndPersistsNothing(t *testing.T) {
	h := newHarness(t)
	h.provider.Enqueue(providertest.Script{
		Chunks: append(providertest.ReasoningContent("think first", 2), providertest.Answer("Paris, as before.", 3)...),
		Usage:  &providertest.Usage{PromptTokens: 20, CompletionTokens: 5},
	})
	sessionsBefore, messagesBefore := h.historyRows()

	s := h.chatStateless(`{"messages":[
		{"role":"user","content":"What is the capital of France?"},
		{"role":"assistant","content":"Paris."},
		{"role":"user","content":"Are you sure?"}]}`)
	evs := s.all()
	checkSeqs(t, evs, 1)
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted || fin.MessageID != s.messageID() {
		t.Fatalf("finished = %+v, X-Message-Id %q", fin, s.messageID())
	}
	started := evs[0].Payload.(eventbus.StreamStarted)
	if started.SessionID != "" || started.UserMessageID != "" || started.MessageID != s.messageID() || started.Mode != "chat" {
		t.Fatalf("stream.started = %+v", started)
	}
	if got := text(evs, eventbus.TypeAnswerDelta); got != "Paris, as before." {
		t.Fatalf("answer = %q", got)
	}
	if got := text(evs, eventbus.TypeThinkingDelta); got != "<think>think first</think>" {
		t.Fatalf("thinking = %q", got)
	}

	// The earlier turns reached the model as history, in order.
	msgs := providerMessages(h.provider.Requests()[0])
	want := []string{"user: What is the capital of France?", "assistant: Paris.", "user: Are you sure?"}
	if len(msgs) < 3 || strings.Join(msgs[len(msgs)-3:], "|") != strings.Join(want, "|") {
		t.Fatalf("provider messages = %q", msgs)
	}

	// Nothing was saved: no session in the API, no row in the database.
	h.waitDone(s.messageID())
	var list struct{ Sessions []handler.SessionJSON }
	if code := h.call("GET", "/api/v1/sessions", "", &list); code != http.StatusOK || len(list.Sessions) != 0 {
		t.Fatalf("sessions after a stateless chat: %d %+v", code, list.Sessions)
	}
	if sessions, messages := h.historyRows(); sessions != sessionsBefore || messages != messagesBefore {
		t.Fatalf("history rows went from %d/%d to %d/%d", sessionsBefore, messagesBefore, sessions, messages)
	}
}

func TestStatelessChatAsJSON(t *testing.T) {
	h := newHarness(t)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Forty-two.", 2)})
	var msg handler.MessageJSON
	code := h.call("POST", "/api/v1/chat", `{"messages":[{"role":"user","content":"q"}],"mode":"chat","stream":false}`, &msg)
	if code != http.StatusOK || msg.Content != "Forty-two." || msg.Status != "completed" || msg.ID == "" {
		t.Fatalf("%d %+v", code, msg)
	}
	if sessions, messages := h.historyRows(); sessions != 0 || messages != 0 {
		t.Fatalf("history rows: %d sessions, %d messages", sessions, messages)
	}
}

// A stateless stream is a stream like any other while it runs: it can be
// resumed after a cut and stopped, but only by its own tenant.
func TestStatelessStreamCanBeResumedAndStoppedByItsTenant(t *testing.T) {
	h := newHarness(t, withTwoTenants)
	acme, beta := h.as(acmeKey), h.as(betaKey)
	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.Enqueue(providertest.Script{
		Chunks: []providertest.Chunk{{Content: "one "}, {Content: "two "}, {Content: "three "}, {Content: "four"}}, Hold: gate, HoldAfter: 2})

	s := acme.chatStateless(`{"messages":[{"role":"user","content":"count"}]}`)
	id := s.messageID()
	first := s.until(isType(eventbus.TypeAnswerDelta))
	// The requester stays connected: a requester that leaves stops a
	// stateless answer (TestStatelessChatClientThatLeavesStopsTheGeneration).
	defer s.close()

	// Another tenant sees nothing.
	if code := beta.call("GET", "/api/v1/streams/"+id, "", nil); code != http.StatusNotFound {
		t.Fatalf("another tenant's resume: %d", code)
	}
	if code := beta.call("POST", "/api/v1/streams/"+id+"/stop", "", nil); code != http.StatusNotFound {
		t.Fatalf("another tenant's stop: %d", code)
	}

	// Resume after the last event seen, then stop.
	last := first[len(first)-1].Seq
	r := acme.open("GET", "/api/v1/streams/"+id+"?after="+itoa(last), "")
	if r.resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: %d", r.resp.StatusCode)
	}
	if err := gate.WaitReached(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	var stop map[string]string
	if code := acme.call("POST", "/api/v1/streams/"+id+"/stop", "", &stop); code != http.StatusAccepted || stop["status"] != "stopping" {
		t.Fatalf("stop: %d %v", code, stop)
	}
	rest := r.all()
	checkSeqs(t, append(first, rest...), 1)
	if fin := finished(t, rest); fin.Status != eventbus.StatusStopped || fin.Reason != "user" {
		t.Fatalf("finished = %+v", fin)
	}
	if err := h.provider.WaitAbort(ctxTimeout(t)); err != nil {
		t.Fatalf("the provider call was not aborted: %v", err)
	}
	if got := text(append(first, rest...), eventbus.TypeAnswerDelta); got != "one two " {
		t.Fatalf("answer = %q", got)
	}
	if sessions, messages := h.historyRows(); sessions != 0 || messages != 0 {
		t.Fatalf("history rows: %d sessions, %d messages", sessions, messages)
	}
}

func TestStatelessChatRejectsMalformedConversations(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ name, body, code string }{
		{"no messages", `{"messages":[]}`, "empty_messages"},
		{"missing messages", `{}`, "empty_messages"},
		{"ends with the assistant", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`, "no_question"},
		{"system role", `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"q"}]}`, "invalid_role"},
		{"empty question", `{"messages":[{"role":"user","content":"  "}]}`, "empty_content"},
		{"unknown mode", `{"messages":[{"role":"user","content":"q"}],"mode":"nope"}`, "unknown_mode"},
		{"unknown field", `{"messages":[{"role":"user","content":"q"}],"model":"chat"}`, "unknown_field"},
	} {
		var e handler.ErrorBody
		if code := h.call("POST", "/api/v1/chat", tc.body, &e); code != http.StatusBadRequest || e.Error.Code != tc.code {
			t.Errorf("%s: %d %+v, want 400 %s", tc.name, code, e, tc.code)
		}
	}
	if n := len(h.provider.Requests()); n != 0 {
		t.Fatalf("%d provider requests for rejected conversations", n)
	}
}

// The modes endpoint feeds the web page's selectors: modes, and models
// to compare side by side.
func TestModesListsTheConfiguredModes(t *testing.T) {
	h := newHarness(t)
	var out struct {
		Modes   []string
		Default string
		Models  []string
		Titles  bool
	}
	if code := h.call("GET", "/api/v1/modes", "", &out); code != http.StatusOK {
		t.Fatalf("modes: %d", code)
	}
	if strings.Join(out.Modes, ",") != "agent,chat,rag,research" || out.Default != "chat" || strings.Join(out.Models, ",") != "default" || out.Titles {
		t.Fatalf("modes = %+v", out)
	}
}

// The stateless chat API gets the same services as a session's answer:
// with response_cache in its mode, a question asked again is answered
// from the cache, streamed or as JSON, and the provider is asked once.
func TestStatelessChatIsAnsweredFromTheResponseCache(t *testing.T) {
	h := newHarness(t, withCachedRAG)
	h.addDocument("Sourdough", sourdough)
	h.provider.SetDefault(providertest.Script{Chunks: providertest.Answer("Feed it twice a day [1].", 4)})
	const body = `{"messages":[{"role":"user","content":"How often do I feed a sourdough starter?"}],"mode":"rag"}`

	if d := cacheStage(t, h.chatStateless(body).all()); d != "cache miss" {
		t.Fatalf("first ask: %q", d)
	}
	second := h.chatStateless(body).all()
	if d := cacheStage(t, second); d != "cache hit" {
		t.Fatalf("second ask: %q, want a cache hit", d)
	}
	checkSeqs(t, second, 1)
	if got := text(second, eventbus.TypeAnswerDelta); got != "Feed it twice a day [1]." {
		t.Fatalf("replayed answer %q", got)
	}
	var msg handler.MessageJSON
	asJSON := strings.Replace(body, `"mode":"rag"`, `"mode":"rag","stream":false`, 1)
	if code := h.call("POST", "/api/v1/chat", asJSON, &msg); code != http.StatusOK ||
		msg.Content != "Feed it twice a day [1]." || msg.Status != eventbus.StatusCompleted || len(msg.References) == 0 {
		t.Fatalf("as JSON: %d %+v", code, msg)
	}
	if n := len(h.provider.Requests()); n != 1 {
		t.Fatalf("%d provider requests, want 1: the repeats were not served from the cache", n)
	}
}
