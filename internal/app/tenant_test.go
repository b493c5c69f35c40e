package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/auth"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

const (
	acmeKey = "acme-0123456789abcdef"
	betaKey = "beta-0123456789abcdef"
)

func withTwoTenants(c *config.Config) {
	c.Auth.Keys = []config.AuthKey{
		{Tenant: "acme", Key: acmeKey},
		{Tenant: "beta", KeySHA256: auth.Hash(betaKey)},
	}
}

func TestRequestsWithoutAValidKeyAreRejected(t *testing.T) {
	h := newHarness(t, withTwoTenants)
	for _, tc := range []struct{ name, header string }{
		{"no key", ""},
		{"wrong key", "Bearer not-a-key-at-all-000"},
		{"wrong scheme", "Basic " + acmeKey},
	} {
		req, _ := http.NewRequest("GET", h.url("/api/v1/sessions"), nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e handler.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || e.Error.Code != "unauthorized" || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %d %+v", tc.name, resp.StatusCode, e)
		}
	}
	if code := h.call("GET", "/healthz", "", nil); code != http.StatusOK {
		t.Fatalf("healthz needs no key: %d", code)
	}
	if code := h.as(acmeKey).call("GET", "/api/v1/sessions", "", nil); code != http.StatusOK {
		t.Fatalf("valid key: %d", code)
	}
}

// Another tenant's session, message, stream and document answer 404,
// exactly like ids that do not exist, on every route.
func TestTenantsSeeOnlyTheirOwnDataOnEveryRoute(t *testing.T) {
	h := newHarness(t, withTwoTenants, ragMode)
	acme, beta := h.as(acmeKey), h.as(betaKey)

	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("acme's answer", 4), Hold: gate, HoldAfter: 2})
	session := acme.createSession()
	doc := acme.addDocument("Acme secrets", "# Acme launch plan\n\nThe rocket launches on Friday from pad 39.")
	s := acme.ask(session, "When does the rocket launch?")
	_ = gate.WaitReached(ctxTimeout(t))
	stream := s.messageID()

	notFound := func(method, path, body string) {
		t.Helper()
		resp := beta.do(context.Background(), method, path, body)
		var e handler.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("beta %s %s: %d %+v, want 404", method, path, resp.StatusCode, e)
		}
	}
	notFound("GET", "/api/v1/sessions/"+session, "")
	notFound("GET", "/api/v1/sessions/"+session+"/messages", "")
	notFound("POST", "/api/v1/sessions/"+session+"/messages", `{"content":"mine now"}`)
	notFound("DELETE", "/api/v1/sessions/"+session, "")
	notFound("GET", "/api/v1/streams/"+stream, "")
	notFound("POST", "/api/v1/streams/"+stream+"/stop", "")
	notFound("GET", "/api/v1/knowledge/documents/"+doc.ID, "")
	notFound("DELETE", "/api/v1/knowledge/documents/"+doc.ID, "")

	var sessions struct{ Sessions []handler.SessionJSON }
	beta.call("GET", "/api/v1/sessions", "", &sessions)
	var docs struct {
		Documents []handler.DocumentJSON
		Total     int
	}
	beta.call("GET", "/api/v1/knowledge/documents", "", &docs)
	if len(sessions.Sessions) != 0 || docs.Total != 0 {
		t.Fatalf("beta lists acme's data: %+v %+v", sessions, docs)
	}
	if r := beta.search("rocket launch Friday"); len(r.Hits) != 0 {
		t.Fatalf("beta's search finds acme's document: %+v", r.Hits)
	}
	// Beta's own rag answer does not see acme's document either.
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("No idea.", 2)})
	evs := beta.ask(beta.createSession(), "When does the rocket launch?").all()
	if refs := evs[indexOf(evs, eventbus.TypeReferences)].Payload.(eventbus.References); len(refs.Items) != 0 {
		t.Fatalf("beta's answer cites acme's document: %+v", refs.Items)
	}

	// Nothing of acme's was touched, and acme still sees everything.
	gate.Release()
	if fin := finished(t, s.all()); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("acme's stream = %+v after beta's attempts", fin)
	}
	if msgs := acme.messages(session); len(msgs) != 2 || msgs[1].Content != "acme's answer" {
		t.Fatalf("acme's messages = %+v", msgs)
	}
	if r := acme.search("rocket launch Friday"); len(r.Hits) == 0 || r.Hits[0].DocumentID != doc.ID {
		t.Fatalf("acme's search = %+v", r)
	}
	replay := acme.open("GET", "/api/v1/streams/"+stream, "").all()
	if finished(t, replay).Status != eventbus.StatusCompleted {
		t.Fatal("acme cannot replay its own stream")
	}
}

// EventSource cannot send headers: GET on a stream accepts the key as
// ?access_token=, and nowhere else.
func TestStreamResumeAcceptsTheKeyAsAQueryParameter(t *testing.T) {
	h := newHarness(t, withTwoTenants)
	acme := h.as(acmeKey)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("ok", 1)})
	s := acme.ask(acme.createSession(), "q")
	s.all()
	r := h.open("GET", "/api/v1/streams/"+s.messageID()+"?after=0&access_token="+acmeKey, "")
	if r.resp.StatusCode != http.StatusOK || finished(t, r.all()).Status != eventbus.StatusCompleted {
		t.Fatalf("resume with access_token: %d", r.resp.StatusCode)
	}
	if code := h.call("GET", "/api/v1/sessions?access_token="+acmeKey, "", nil); code != http.StatusUnauthorized {
		t.Fatalf("access_token accepted outside streams: %d", code)
	}
	if strings.Contains(strings.Join(logMessages(h), "\n"), acmeKey) {
		t.Fatal("the key appears in the logs")
	}
}

func logMessages(h *harness) []string {
	var out []string
	for _, e := range h.logs.All() {
		b, _ := json.Marshal(e.ContextMap())
		out = append(out, e.Message+" "+string(b))
	}
	return out
}
