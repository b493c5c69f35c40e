package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// A question answered by two models makes two provider calls at once, so
// it takes two of the key's answer slots.
func TestSideBySideQuestionCountsOneSlotPerModel(t *testing.T) {
	h := newHarness(t, withOtherModel, func(c *config.Config) {
		c.Limits.MaxConcurrentStreams = 2
		c.Models["third"] = c.Models["other"]
	})
	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.SetDefault(providertest.Script{Chunks: providertest.Answer("held answer", 2), Hold: gate, HoldAfter: 1})
	session := h.createSession()
	both := h.compare(session, "first", "default", "other")
	_ = gate.WaitReached(ctxTimeout(t))
	// Held now, so still live: waitDone would return at once if the run
	// had already left the live list but not yet released its slots.
	run, live := h.app.Runs().Lookup(both.messageID())
	if !live {
		t.Fatal("the held side-by-side run is not live")
	}

	resp := h.do(ctxTimeout(t), "POST", "/api/v1/sessions/"+session+"/messages", `{"content":"second"}`)
	e := errorOf(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests || e.Error.Code != "too_many_streams" {
		t.Fatalf("a third provider call while two run (limit 2): %d %+v", resp.StatusCode, e)
	}
	gate.Release()
	evs := both.all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("side-by-side answer: %+v", fin)
	}
	select {
	case <-run.Done(): // its slots are released before Done closes
	case <-ctxTimeout(t).Done():
		t.Fatal("the side-by-side run did not end")
	}
	// Three models can never fit under a limit of two: the refusal says why.
	resp = h.do(ctxTimeout(t), "POST", "/api/v1/sessions/"+session+"/messages",
		`{"content":"too wide","models":["default","other","third"]}`)
	if e := errorOf(t, resp); resp.StatusCode != http.StatusBadRequest || e.Error.Code != "too_many_models" ||
		!strings.Contains(e.Error.Message, "3 models") {
		t.Fatalf("three models under a limit of two: %d %+v", resp.StatusCode, e)
	}
	if fin := finished(t, h.compare(session, "again", "default", "other").all()); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("after the slots were freed: %+v", fin)
	}
}

func TestHTMLNestedTooDeeplyIsRefusedSayingWhy(t *testing.T) {
	h := newHarness(t)
	deep := strings.Repeat("<div>", 600) + "Some real text." + strings.Repeat("</div>", 600)
	body, ct := multipartUpload(t, "deep.html", deep, "")
	resp := h.do(ctxTimeout(t), "POST", "/api/v1/knowledge/documents", body, "Content-Type", ct)
	e := errorOf(t, resp)
	if resp.StatusCode != http.StatusBadRequest || e.Error.Code != "document_too_deep" ||
		!strings.Contains(e.Error.Message, "512") {
		t.Fatalf("deeply nested HTML: %d %+v", resp.StatusCode, e)
	}
	// Nesting the parser accepts is read as usual.
	ok := strings.Repeat("<div>", 400) + "Some real text." + strings.Repeat("</div>", 400)
	body, ct = multipartUpload(t, "ok.html", ok, "")
	resp = h.do(ctxTimeout(t), "POST", "/api/v1/knowledge/documents", body, "Content-Type", ct)
	if resp.Body.Close(); resp.StatusCode != http.StatusCreated {
		t.Fatalf("HTML nested 400 deep: %d", resp.StatusCode)
	}
}

func TestResumeCursorMustBeDigits(t *testing.T) {
	h := newHarness(t)
	s := h.ask(h.createSession(), "hello")
	id := s.messageID()
	s.all()
	for _, tc := range []struct{ query, header string }{
		{"?after=%2B5", ""}, // after=+5, encoded
		{"?after=+5", ""},   // as curl sends it: the server reads " 5"
		{"", "+5"},
	} {
		var header []string
		if tc.header != "" {
			header = []string{"Last-Event-ID", tc.header}
		}
		resp := h.do(ctxTimeout(t), "GET", "/api/v1/streams/"+id+tc.query, "", header...)
		e := errorOf(t, resp)
		if resp.StatusCode != http.StatusBadRequest || e.Error.Code != "invalid_cursor" {
			t.Errorf("cursor %q %q: %d %+v", tc.query, tc.header, resp.StatusCode, e)
		}
	}
}
