package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/handler"
)

// askAndWait asks a question and reads its stream to the end; it returns
// the assistant message id.
func (h *harness) askAndWait(session, question string) string {
	h.t.Helper()
	s := h.ask(session, question)
	finished(h.t, s.all())
	return s.messageID()
}

// feedbackOf returns the feedback the messages API shows on message id.
func (h *harness) feedbackOf(session, id string) *handler.FeedbackJSON {
	h.t.Helper()
	return h.message(session, id).Feedback
}

func feedbackMetric(rating, removed string) string {
	name := "chatpipe_feedback_total"
	if removed != "" {
		name = "chatpipe_feedback_removed_total"
		rating = removed
	}
	return name + `{mode="chat",model="` + feedbackModel + `",rating="` + rating + `"}`
}

func TestFeedbackIsSetChangedDeletedAndCounted(t *testing.T) {
	h := newHarness(t)
	sess := h.createSession()
	answer := h.askAndWait(sess, "What is chatpipe?")
	before := scrape(t, h)
	if got := h.feedbackOf(sess, answer); got != nil {
		t.Fatalf("a new answer has feedback %+v", got)
	}

	var f handler.FeedbackJSON
	if code := h.call("PUT", "/api/v1/messages/"+answer+"/feedback", `{"rating":"up","comment":"clear and short"}`, &f); code != http.StatusOK {
		t.Fatalf("PUT feedback: %d", code)
	}
	if f.MessageID != answer || f.Rating != "up" || f.Comment != "clear and short" || f.CreatedAt == "" {
		t.Fatalf("PUT answered %+v", f)
	}
	// Idempotent: the same request again changes nothing and counts nothing.
	if code := h.call("PUT", "/api/v1/messages/"+answer+"/feedback", `{"rating":"up","comment":"clear and short"}`, nil); code != http.StatusOK {
		t.Fatalf("PUT again: %d", code)
	}
	if got := h.feedbackOf(sess, answer); got == nil || got.Rating != "up" || got.Comment != "clear and short" {
		t.Fatalf("messages API shows %+v", got)
	}
	after := scrape(t, h)
	if d := after[feedbackMetric("up", "")] - before[feedbackMetric("up", "")]; d != 1 {
		t.Fatalf("up counted %v times, want 1", d)
	}

	if code := h.call("PUT", "/api/v1/messages/"+answer+"/feedback", `{"rating":"down","reason":"wrong","comment":"it is a Go server"}`, nil); code != http.StatusOK {
		t.Fatalf("change: %d", code)
	}
	got := h.feedbackOf(sess, answer)
	if got == nil || got.Rating != "down" || got.Reason != "wrong" || got.Comment != "it is a Go server" || got.CreatedAt != f.CreatedAt {
		t.Fatalf("after the change: %+v (first %+v)", got, f)
	}
	changed := scrape(t, h)
	if changed[feedbackMetric("down", "")]-before[feedbackMetric("down", "")] != 1 ||
		changed[feedbackMetric("", "up")]-before[feedbackMetric("", "up")] != 1 {
		t.Fatalf("a change counts down given and up removed: %v", changed)
	}

	var export struct{ Feedback []handler.FeedbackJSON }
	if code := h.call("GET", "/api/v1/feedback?since="+time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "", &export); code != http.StatusOK ||
		len(export.Feedback) != 1 || export.Feedback[0].MessageID != answer || export.Feedback[0].SessionID != sess ||
		export.Feedback[0].Rating != "down" || export.Feedback[0].Mode != "chat" || export.Feedback[0].Model != feedbackModel {
		t.Fatalf("export: %d %+v", code, export)
	}
	if code := h.call("GET", "/api/v1/feedback?since="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "", &export); code != http.StatusOK ||
		len(export.Feedback) != 0 {
		t.Fatalf("export since a later time: %d %+v", code, export)
	}

	for range 2 { // deleting is idempotent too
		if code := h.call("DELETE", "/api/v1/messages/"+answer+"/feedback", "", nil); code != http.StatusNoContent {
			t.Fatalf("DELETE: %d", code)
		}
	}
	if got := h.feedbackOf(sess, answer); got != nil {
		t.Fatalf("deleted feedback still shown: %+v", got)
	}
	deleted := scrape(t, h)
	if deleted[feedbackMetric("", "down")]-before[feedbackMetric("", "down")] != 1 {
		t.Fatalf("a delete counts the rating removed once")
	}
}

func TestFeedbackBadInputIsRefusedAndSavesNothing(t *testing.T) {
	h := newHarness(t, withTwoTenants)
	acme, beta := h.as(acmeKey), h.as(betaKey)
	sess := acme.createSession()
	answer := acme.askAndWait(sess, "Hello?")
	question := acme.messages(sess)[0].ID
	if code := acme.call("PUT", "/api/v1/messages/"+answer+"/feedback", `{"rating":"up","comment":"kept"}`, nil); code != http.StatusOK {
		t.Fatalf("PUT: %d", code)
	}
	for _, tc := range []struct {
		name       string
		h          *harness
		method, id string
		body       string
		status     int
		code       string
	}{
		{"unknown rating", acme, "PUT", answer, `{"rating":"meh"}`, 400, "invalid_rating"},
		{"no rating", acme, "PUT", answer, `{"comment":"x"}`, 400, "invalid_rating"},
		{"unknown field", acme, "PUT", answer, `{"rating":"up","stars":5}`, 400, "unknown_field"},
		{"not JSON", acme, "PUT", answer, `rating=up`, 400, "invalid_json"},
		{"comment too long", acme, "PUT", answer, `{"rating":"up","comment":"` + strings.Repeat("x", 4001) + `"}`, 400, "comment_too_long"},
		{"a question", acme, "PUT", question, `{"rating":"up"}`, 400, "not_an_answer"},
		{"missing message", acme, "PUT", "no-such-message", `{"rating":"up"}`, 404, "message_not_found"},
		{"another tenant's answer", beta, "PUT", answer, `{"rating":"down"}`, 404, "message_not_found"},
		{"another tenant deletes", beta, "DELETE", answer, ``, 404, "message_not_found"},
		{"delete on a missing message", acme, "DELETE", "no-such-message", ``, 404, "message_not_found"},
	} {
		var e handler.ErrorBody
		if got := tc.h.call(tc.method, "/api/v1/messages/"+tc.id+"/feedback", tc.body, &e); got != tc.status || e.Error.Code != tc.code || e.Error.Message == "" {
			t.Errorf("%s: %d %+v, want %d %s", tc.name, got, e, tc.status, tc.code)
		}
	}
	if got := acme.feedbackOf(sess, answer); got == nil || got.Rating != "up" || got.Comment != "kept" {
		t.Fatalf("refused requests changed the feedback: %+v", got)
	}
	var export struct{ Feedback []handler.FeedbackJSON }
	if code := beta.call("GET", "/api/v1/feedback", "", &export); code != http.StatusOK || len(export.Feedback) != 0 {
		t.Fatalf("another tenant's export shows %d %+v", code, export)
	}
	if code := acme.call("GET", "/api/v1/feedback", "", &export); code != http.StatusOK || len(export.Feedback) != 1 {
		t.Fatalf("own export: %d %+v", code, export)
	}
	var e handler.ErrorBody
	if code := acme.call("GET", "/api/v1/feedback?since=yesterday", "", &e); code != 400 || e.Error.Code != "invalid_query" {
		t.Fatalf("bad since: %d %+v", code, e)
	}
}

// feedbackModel is the model label feedback on the fake provider's
// answers is counted under: the model the saved message records.
const feedbackModel = "default"
