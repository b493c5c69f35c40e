package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

func TestSessionsCreateListGetDelete(t *testing.T) {
	h := newHarness(t)
	var s handler.SessionJSON
	if code := h.call("POST", "/api/v1/sessions", `{"title":"  Trip planning  "}`, &s); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	if s.ID == "" || s.Title != "Trip planning" || s.Mode != "chat" || s.CreatedAt == "" {
		t.Fatalf("created = %+v", s)
	}
	var empty handler.SessionJSON
	if code := h.call("POST", "/api/v1/sessions", "", &empty); code != http.StatusCreated || empty.Title != "New chat" {
		t.Fatalf("create with no body: %d %+v", code, empty)
	}
	var got handler.SessionJSON
	if code := h.call("GET", "/api/v1/sessions/"+s.ID, "", &got); code != http.StatusOK || got != s {
		t.Fatalf("get: %d %+v", code, got)
	}
	var list struct{ Sessions []handler.SessionJSON }
	if code := h.call("GET", "/api/v1/sessions?limit=10", "", &list); code != http.StatusOK || len(list.Sessions) != 2 {
		t.Fatalf("list: %d %+v", code, list)
	}
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("kept until deleted", 2)})
	h.ask(s.ID, "q").all()
	if code := h.call("DELETE", "/api/v1/sessions/"+s.ID, "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	for _, path := range []string{"/api/v1/sessions/" + s.ID, "/api/v1/sessions/" + s.ID + "/messages"} {
		var e handler.ErrorBody
		if code := h.call("GET", path, "", &e); code != http.StatusNotFound || e.Error.Code != "session_not_found" {
			t.Fatalf("GET %s after delete: %d %+v", path, code, e)
		}
	}
}

func TestDeletingASessionStopsItsRunningAnswer(t *testing.T) {
	h := newHarness(t)
	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("never finished", 4), Hold: gate, HoldAfter: 2})
	session := h.createSession()
	s := h.ask(session, "q")
	_ = gate.WaitReached(ctxTimeout(t))
	if code := h.call("DELETE", "/api/v1/sessions/"+session, "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if err := h.provider.WaitAbort(ctxTimeout(t)); err != nil {
		t.Fatalf("provider call not aborted: %v", err)
	}
	if fin := finished(t, s.all()); fin.Status != eventbus.StatusStopped {
		t.Fatalf("finished = %+v", fin)
	}
}

// Every bad request gets a 4xx with {"error":{"code","message"}}, no stack
// trace, and nothing is saved.
func TestBadInputGetsClearErrorsAndSavesNothing(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.Limits.MaxQuestionChars = 20
		c.Limits.MaxBodyBytes = 200
		c.Limits.MaxTitleChars = 10
	})
	session := h.createSession()
	msgs := "/api/v1/sessions/" + session + "/messages"
	for _, tc := range []struct {
		method, path, body string
		header             []string
		status             int
		code               string
	}{
		{"POST", "/api/v1/sessions", `{"title":`, nil, 400, "invalid_json"},
		{"POST", "/api/v1/sessions", `[1,2]`, nil, 400, "invalid_json"},
		{"POST", "/api/v1/sessions", `{"title":5}`, nil, 400, "invalid_field"},
		{"POST", "/api/v1/sessions", `{"titel":"x"}`, nil, 400, "unknown_field"},
		{"POST", "/api/v1/sessions", `{"title":"far too long a title"}`, nil, 400, "title_too_long"},
		{"POST", "/api/v1/sessions", `{"mode":"nope"}`, nil, 400, "unknown_mode"},
		{"POST", "/api/v1/sessions", `{} {}`, nil, 400, "invalid_json"},
		{"GET", "/api/v1/sessions?limit=0", "", nil, 400, "invalid_query"},
		{"GET", "/api/v1/sessions?offset=-1", "", nil, 400, "invalid_query"},
		{"GET", "/api/v1/sessions/does-not-exist", "", nil, 404, "session_not_found"},
		{"DELETE", "/api/v1/sessions/does-not-exist", "", nil, 404, "session_not_found"},
		{"PUT", "/api/v1/sessions", `{}`, nil, 405, "method_not_allowed"},
		{"GET", "/api/v1/nothing-here", "", nil, 404, "not_found"},
		{"POST", msgs, ``, nil, 400, "invalid_json"},
		{"POST", msgs, `not json`, nil, 400, "invalid_json"},
		{"POST", msgs, `{"content":""}`, nil, 400, "empty_content"},
		{"POST", msgs, `{"content":"   \n "}`, nil, 400, "empty_content"},
		{"POST", msgs, `{"content":"this question is much longer than twenty characters"}`, nil, 400, "content_too_long"},
		{"POST", msgs, `{"content":"` + strings.Repeat("x", 300) + `"}`, nil, 413, "body_too_large"},
		{"POST", msgs, `{"content":"hi","stream":"yes"}`, nil, 400, "invalid_field"},
		{"POST", msgs, `{"content":"hi","mode":"nope"}`, nil, 400, "unknown_mode"},
		{"POST", "/api/v1/sessions/does-not-exist/messages", `{"content":"hi"}`, nil, 404, "session_not_found"},
		{"GET", "/api/v1/streams/does-not-exist", "", nil, 404, "stream_not_found"},
		{"GET", "/api/v1/streams/x?after=abc", "", nil, 400, "invalid_cursor"},
		{"GET", "/api/v1/streams/x", "", []string{"Last-Event-ID", "-1"}, 400, "invalid_cursor"},
		{"POST", "/api/v1/streams/does-not-exist/stop", "", nil, 404, "stream_not_found"},
		{"GET", "/api/v1/streams/x/stop", "", nil, 405, "method_not_allowed"},
	} {
		resp := h.do(context.Background(), tc.method, tc.path, tc.body, tc.header...)
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e handler.ErrorBody
		if err := json.Unmarshal(data, &e); err != nil || resp.StatusCode != tc.status || e.Error.Code != tc.code || e.Error.Message == "" {
			t.Errorf("%s %s %q: %d %s; want %d %s", tc.method, tc.path, tc.body, resp.StatusCode, data, tc.status, tc.code)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s %s: Content-Type %q", tc.method, tc.path, ct)
		}
		for _, leak := range []string{"goroutine", "panic", ".go:", "runtime."} {
			if strings.Contains(string(data), leak) {
				t.Errorf("%s %s: body leaks %q: %s", tc.method, tc.path, leak, data)
			}
		}
	}
	// The path is quoted in the message: the full stop after
	// ".../documents/" is not part of it.
	var e handler.ErrorBody
	if code := h.call("DELETE", "/api/v1/knowledge/documents/", "", &e); code != 404 ||
		e.Error.Message != `No such endpoint: DELETE "/api/v1/knowledge/documents/".` {
		t.Errorf("DELETE without an id: %d %q", code, e.Error.Message)
	}
	if n := len(h.messages(session)); n != 0 {
		t.Fatalf("%d messages saved from rejected requests", n)
	}
	if n := len(h.provider.Requests()); n != 0 {
		t.Fatalf("the provider was called %d times for rejected requests", n)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	h := newHarness(t)
	var body map[string]string
	if code := h.call("GET", "/healthz", "", &body); code != 200 || body["status"] != "ok" {
		t.Fatalf("healthz: %d %v", code, body)
	}
	if code := h.call("GET", "/readyz", "", &body); code != 200 || body["status"] != "ready" {
		t.Fatalf("readyz: %d %v", code, body)
	}
}
