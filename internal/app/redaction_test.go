package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// secretForms are the shapes in which a leaked key could be read in a
// response: as written, JSON-escaped (inside event data) and URL-encoded.
func secretForms(key string) []string {
	js, _ := json.Marshal(key)
	return []string{key, string(js[1 : len(js)-1]), url.QueryEscape(key)}
}

// assertNoSecret fails when any form of key is in text.
func assertNoSecret(t *testing.T, where, text, key string) {
	t.Helper()
	for _, form := range secretForms(key) {
		if strings.Contains(text, form) {
			t.Errorf("the configured key %q reached %s: %s", key, where, text)
		}
	}
}

// leakSurfaces asks one question of each API the user sees — a session's
// SSE stream and its saved message, the stateless API, the
// OpenAI-compatible API streaming and not — and returns every text a user
// received, by surface. The provider answers each call with script.
func leakSurfaces(t *testing.T, h *harness, script providertest.Script) map[string]string {
	t.Helper()
	h.provider.SetDefault(script)
	out := map[string]string{}
	read := func(resp *http.Response) string {
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return string(data)
	}
	session := h.createSession()
	resp := h.do(ctxTimeout(t), "POST", "/api/v1/sessions/"+session+"/messages", `{"content":"hello"}`)
	id := resp.Header.Get("X-Message-Id")
	out["the SSE events"] = read(resp)
	h.waitDone(id)
	out["the saved message"] = read(h.do(ctxTimeout(t), "GET", "/api/v1/sessions/"+session+"/messages", ""))
	out["the stateless API"] = read(h.do(ctxTimeout(t), "POST", "/api/v1/chat",
		`{"messages":[{"role":"user","content":"hello"}]}`))
	out["the stateless API (JSON)"] = read(h.do(ctxTimeout(t), "POST", "/api/v1/chat",
		`{"stream":false,"messages":[{"role":"user","content":"hello"}]}`))
	out["the OpenAI-compatible API"] = read(h.do(ctxTimeout(t), "POST", "/v1/chat/completions",
		`{"model":"chat","messages":[{"role":"user","content":"hello"}]}`))
	out["the OpenAI-compatible stream"] = read(h.do(ctxTimeout(t), "POST", "/v1/chat/completions",
		`{"model":"chat","stream":true,"messages":[{"role":"user","content":"hello"}]}`))
	return out
}

// logText is every log line of the server, message and fields.
func logText(h *harness) string {
	var b strings.Builder
	for _, e := range h.logs.All() {
		fmt.Fprintf(&b, "%s %v\n", e.Message, e.ContextMap())
	}
	return b.String()
}

func TestConfiguredSecretsNeverReachUsersOrTheLog(t *testing.T) {
	const (
		groqKey   = "gsk_8fJq2LmN0pQrStUvWxYz41aB"
		openaiKey = "sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4"
		bareKey   = "c0ffee11d00dfeedbeef2233"
		embedKey  = "EMB-9a8b7c6d5e4f3a2b1c0d"
		redisPass = "r3dis-p4ss-w0rd-xyz"
	)
	cases := []struct {
		name   string
		key    string // the key of the "default" model
		script providertest.Script
	}{
		{"Groq-style 401", groqKey, providertest.Script{Status: 401,
			Error: providertest.ErrorObject{Message: "Invalid API Key: " + groqKey, Type: "invalid_request_error"}}},
		{"key= in a 400", openaiKey, providertest.Script{Status: 400,
			Error: providertest.ErrorObject{Message: "bad request (key=" + openaiKey + ")"}}},
		{"bare key in a plain-text 500", bareKey, providertest.Script{Status: 500,
			ErrorBody: "upstream rejected credentials " + bareKey + " for this org"}},
		{"URL-encoded key in a 502", "k/ey+with=odd&chars99", providertest.Script{Status: 502,
			ErrorBody: "GET /v1/x?api_key=" + url.QueryEscape("k/ey+with=odd&chars99") + " failed"}},
		{"mid-stream error", bareKey, providertest.Script{Chunks: providertest.Answer("partial ", 1),
			MidStreamError: &providertest.StreamError{After: 1, ErrorObject: providertest.ErrorObject{
				Message: "stream aborted for key " + bareKey, Type: "server_error"}}}},
		{"embedder key echoed", groqKey, providertest.Script{Status: 500,
			ErrorBody: "your embeddings key " + embedKey + " is not valid here"}},
		{"Redis password echoed", groqKey, providertest.Script{Status: 500,
			ErrorBody: "redis auth " + redisPass + " refused"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *config.Config) {
				m := c.Models["default"]
				m.APIKey = tc.key
				c.Models["default"] = m
				c.Knowledge.Embedding.APIKey = embedKey
				c.Redis.Password = redisPass
			})
			surfaces := leakSurfaces(t, h, tc.script)
			for where, text := range surfaces {
				if !strings.Contains(text, "error") {
					t.Errorf("%s shows no error: %s", where, text)
				}
				for _, key := range []string{tc.key, embedKey, redisPass} {
					assertNoSecret(t, where, text, key)
				}
			}
			if !strings.Contains(surfaces["the saved message"], `"status":"failed"`) {
				t.Errorf("the answer is not saved as failed: %s", surfaces["the saved message"])
			}
			logs := logText(h)
			if !strings.Contains(logs, "answer failed") {
				t.Errorf("the failure's detail is not in the log:\n%s", logs)
			}
			for _, key := range []string{tc.key, embedKey, redisPass} {
				assertNoSecret(t, "the log", logs, key)
			}
		})
	}
}

// TestProviderErrorDetailStillReachesUsersRedacted shows the redaction
// removes the secret, not the message: a user still reads why the
// provider refused.
func TestProviderErrorDetailStillReachesUsersRedacted(t *testing.T) {
	const key = "c0ffee11d00dfeedbeef2233"
	h := newHarness(t, func(c *config.Config) {
		m := c.Models["default"]
		m.APIKey = key
		c.Models["default"] = m
	})
	h.provider.Enqueue(providertest.Script{Status: 400, Error: providertest.ErrorObject{
		Message: "This model's maximum context length is 8192 tokens (key " + key + ")."}})
	evs := h.ask(h.createSession(), "hello").all()
	e, ok := firstError(evs)
	if !ok || !strings.Contains(e.Message, "maximum context length is 8192 tokens (key [redacted])") {
		t.Fatalf("error event = %+v", e)
	}
}

// TestRedactionFollowsConfigReload: a key changed by a hot reload is
// redacted from the next answers.
func TestRedactionFollowsConfigReload(t *testing.T) {
	const oldKey, newKey = "old-key-0000000000aa", "new-key-1111111111bb"
	provider := providertest.New(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	write := func(key string) {
		yaml := "storage: {sqlite: {path: " + filepath.Join(dir, "db.sqlite") + "}}\n" +
			"default_mode: chat\n" +
			"models:\n  default: {provider: openai, base_url: " + provider.BaseURL() +
			", model: fake, retries: 0, api_key: " + key + "}\n"
		if err := os.WriteFile(path+".tmp", []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	write(oldKey)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, provider, cfg, path)
	write(newKey)
	deadline := time.Now().Add(10 * time.Second)
	for h.app.Config().Models["default"].APIKey != newKey {
		if time.Now().After(deadline) {
			t.Fatal("config never reloaded")
		}
		time.Sleep(20 * time.Millisecond)
	}
	provider.Enqueue(providertest.Script{Status: 500, ErrorBody: "bad key " + newKey})
	evs := h.ask(h.createSession(), "hello").all()
	e, _ := firstError(evs)
	if strings.Contains(e.Message, newKey) || !strings.Contains(e.Message, "bad key [redacted]") {
		t.Fatalf("after the reload, the error event is %+v", e)
	}
}
