package llm

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/providertest"
)

func TestOllamaDialect(t *testing.T) {
	t.Parallel()
	cases := []dialectCase{
		{
			name:   "content",
			script: providertest.Script{Chunks: providertest.Answer("Hello from llama, how are you?", 5)},
			check: func(t *testing.T, r result) {
				wantAnswer("Hello from llama, how are you?", "")(t, r)
				if r.finish() != "stop" {
					t.Errorf("finish = %q", r.finish())
				}
			},
		},
		{
			name: "thinking",
			script: providertest.Script{Chunks: slices.Concat(
				providertest.ReasoningContent("Hmm, let me think.", 3), providertest.Answer("Thought it through.", 3))},
			check: wantAnswer("Thought it through.", "Hmm, let me think."),
		},
		{
			name: "usage",
			script: providertest.Script{Chunks: providertest.Answer("ok", 1),
				Usage: &providertest.Usage{PromptTokens: 21, CompletionTokens: 4}},
			check: func(t *testing.T, r result) {
				wantAnswer("ok", "")(t, r)
				if u := r.usage; u == nil || u.PromptTokens != 21 || u.CompletionTokens != 4 || u.TotalTokens != 25 {
					t.Errorf("usage = %+v", u)
				}
			},
		},
		{
			name: "whole tool calls get IDs",
			script: providertest.Script{Chunks: []providertest.Chunk{
				{ToolCalls: []providertest.ToolCallDelta{{Name: "search", Arguments: `{"q":"go"}`}}},
				{ToolCalls: []providertest.ToolCallDelta{{Name: "calc", Arguments: `{"x":1}`}}},
			}},
			check: func(t *testing.T, r result) {
				if r.err != nil {
					t.Fatal(r.err)
				}
				tcs := r.merged.ToolCalls
				if len(tcs) != 2 || tcs[0].Function.Name != "search" || tcs[0].Function.Arguments != `{"q":"go"}` ||
					tcs[0].ID != "call_1" || tcs[1].ID != "call_2" || tcs[1].Function.Name != "calc" {
					t.Errorf("tool calls = %+v", tcs)
				}
			},
		},
		{
			name: "mid-stream error",
			script: providertest.Script{Chunks: providertest.Content("partial", 2),
				MidStreamError: &providertest.StreamError{After: 2, ErrorObject: providertest.ErrorObject{Message: "model runner crashed"}}},
			check: func(t *testing.T, r result) {
				pe := providerError(t, r.err)
				if pe.Message != "model runner crashed" {
					t.Errorf("error = %+v", pe)
				}
				if code, msg, _ := Describe(r.err, "local"); code != "provider_error" || !strings.Contains(msg, "model runner crashed") {
					t.Errorf("Describe = %q %q", code, msg)
				}
			},
		},
		{
			name:   "dropped connection",
			script: providertest.Script{Chunks: providertest.Content("Hello wor", 3), Drop: true},
			check:  wantTruncated,
		},
		{
			name:   "clean end without the done line",
			script: providertest.Script{Chunks: providertest.Content("Hello", 2), NoDone: true},
			check:  wantTruncated,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.New(t)
			srv.Enqueue(tc.script)
			m := newOllamaModel(t, srv, nil)
			tc.check(t, run(t, testContext(t), m))
		})
	}
}

func TestOllamaHTTPErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		script    providertest.Script
		status    int
		retryable bool
		code      string
		msgHas    string
	}{
		{"500", providertest.Script{Status: 500, Error: providertest.ErrorObject{Message: "out of memory"}},
			500, true, "provider_error", "out of memory"},
		{"404 unknown model", providertest.Script{Status: 404,
			Error: providertest.ErrorObject{Message: `model "llama3" not found, try pulling it first`}},
			404, false, "provider_error", "try pulling it first"},
		{"401", providertest.Script{Status: 401}, 401, false, "provider_auth", "check models.local.api_key"},
		{"503 with empty body", providertest.Script{Status: 503, ErrorBody: " ", Header: map[string]string{"Retry-After": "1"}},
			503, true, "provider_error", "HTTP 503"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.New(t)
			srv.Enqueue(tc.script)
			r := run(t, testContext(t), newOllamaModel(t, srv, nil))
			pe := providerError(t, r.err)
			if pe.StatusCode != tc.status || pe.Retryable != tc.retryable {
				t.Errorf("status %d retryable %v, want %d %v (%v)", pe.StatusCode, pe.Retryable, tc.status, tc.retryable, pe)
			}
			code, msg, _ := Describe(r.err, "local")
			if code != tc.code || !strings.Contains(msg, tc.msgHas) {
				t.Errorf("Describe = %q %q, want %q containing %q", code, msg, tc.code, tc.msgHas)
			}
		})
	}
}

func TestOllamaRequest(t *testing.T) {
	t.Parallel()
	srv := providertest.New(t)
	temp := float32(0.3)
	m := newOllamaModel(t, srv, func(c *OllamaConfig) { c.Thinking, c.Temperature, c.MaxTokens = true, &temp, 99 })
	if r := run(t, testContext(t), m); r.err != nil {
		t.Fatal(r.err)
	}
	req := srv.Requests()[0]
	if req.Path != "/api/chat" || req.Body["model"] != "llama3" || req.Body["think"] != true || req.Body["stream"] != true {
		t.Errorf("request = %s %s", req.Path, req.Raw)
	}
	opts, _ := req.Body["options"].(map[string]any)
	if opts["num_predict"] != float64(99) || opts["temperature"] != 0.3 {
		t.Errorf("options = %v", opts)
	}
}

func TestOllamaHeaderTimeout(t *testing.T) {
	t.Parallel()
	srv := providertest.New(t)
	gate := providertest.NewGate()
	defer gate.Release()
	srv.Enqueue(providertest.Script{HoldHeaders: gate})
	m := newOllamaModel(t, srv, func(c *OllamaConfig) { c.HeaderTimeout = 100 * time.Millisecond })
	r := run(t, testContext(t), m)
	pe := providerError(t, r.err)
	if code, _, _ := Describe(r.err, "local"); code != "timeout" || !pe.Retryable {
		t.Errorf("Describe code = %q, error %+v", code, pe)
	}
}
