package app_test

import (
	"encoding/json"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/internal/secrets"
)

const keyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// fuzzKey turns fuzz bytes into a realistic API key: an optional vendor
// prefix and 16–64 characters of the alphabet keys are made of.
func fuzzKey(raw []byte) string {
	var b strings.Builder
	b.WriteString([]string{"", "sk-", "gsk_", "sk-ant-api03-", "AIza"}[int(len(raw))%5])
	for i := 0; i < 16 || (i < len(raw) && i < 64); i++ {
		c := byte(i * 37)
		if i < len(raw) {
			c = raw[i]
		}
		b.WriteByte(keyAlphabet[int(c)%len(keyAlphabet)])
	}
	return b.String()
}

// FuzzConfiguredKeyNeverReachesUsers embeds a random configured key, in
// one of the forms providers echo it, at a random place of a random
// provider error body (JSON error object, plain text, or an error in the
// middle of the stream), and checks that the key is in no event of the
// stream and not in the saved message.
//
//	go test -run x -fuzz FuzzConfiguredKeyNeverReachesUsers -fuzztime 60s ./internal/app/
func FuzzConfiguredKeyNeverReachesUsers(f *testing.F) {
	f.Add([]byte("8fJq2LmN0pQrStUvWxYz41aB"), "Invalid API Key: ", "", uint8(0), uint8(0))
	f.Add([]byte("Zz9Yy8Xx7Ww6Vv5Uu4"), "bad request (key=", ")", uint8(1), uint8(1))
	f.Add([]byte("c0ffee11d00dfeedbeef2233"), "upstream rejected ", " for this org", uint8(2), uint8(2))
	f.Add([]byte("\x00\xff\x10 x"), strings.Repeat("lorem ipsum ", 30), "", uint8(3), uint8(0))
	f.Add([]byte("k"), `{"nested":"`, `"}`, uint8(4), uint8(3))
	f.Fuzz(func(t *testing.T, raw []byte, before, after string, shape, form uint8) {
		key := fuzzKey(raw)
		if strings.Contains(secrets.Marker, key) {
			return // the key is part of the redaction marker: its presence proves nothing
		}
		echoed := key
		switch form % 4 {
		case 1:
			echoed = url.QueryEscape(key)
		case 2:
			js, _ := json.Marshal(key)
			echoed = string(js[1 : len(js)-1])
		case 3:
			echoed = "Bearer " + key
		}
		body := before + echoed + after
		var script providertest.Script
		switch shape % 4 {
		case 0:
			script = providertest.Script{Status: 401, Error: providertest.ErrorObject{Message: body}}
		case 1:
			script = providertest.Script{Status: 400, Error: providertest.ErrorObject{Message: body, Code: "invalid_request"}}
		case 2:
			script = providertest.Script{Status: 503, ErrorBody: body}
		case 3:
			script = providertest.Script{Chunks: providertest.Answer("partial ", 1),
				MidStreamError: &providertest.StreamError{After: 1, ErrorObject: providertest.ErrorObject{
					Message: body, Type: "server_error"}}}
		}
		h := newHarness(t, func(c *config.Config) {
			m := c.Models["default"]
			m.APIKey = key
			c.Models["default"] = m
		})
		h.provider.SetDefault(script)
		session := h.createSession()
		resp := h.do(ctxTimeout(t), "POST", "/api/v1/sessions/"+session+"/messages", `{"content":"hello"}`)
		events, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h.waitDone(resp.Header.Get("X-Message-Id"))
		assertNoSecret(t, "the SSE events", string(events), key)
		if !strings.Contains(string(events), `"status":"failed"`) {
			t.Fatalf("the answer did not fail: %s", events)
		}
		resp = h.do(ctxTimeout(t), "GET", "/api/v1/sessions/"+session+"/messages", "")
		saved, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assertNoSecret(t, "the saved message", string(saved), key)
		assertNoSecret(t, "the log", logText(h), key)
	})
}
