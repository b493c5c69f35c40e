package llm

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/providertest"
)

// dialectCase is one provider behaviour every OpenAI-compatible client
// must handle the same way.
type dialectCase struct {
	name   string
	script providertest.Script
	check  func(t *testing.T, r result)
}

func wantAnswer(content, reasoning string) func(t *testing.T, r result) {
	return func(t *testing.T, r result) {
		t.Helper()
		if r.err != nil {
			t.Fatalf("stream error: %v", r.err)
		}
		if got := r.content(); got != content {
			t.Errorf("content = %q, want %q", got, content)
		}
		if got := r.reasoning(); got != reasoning {
			t.Errorf("reasoning = %q, want %q", got, reasoning)
		}
	}
}

func wantTruncated(t *testing.T, r result) {
	t.Helper()
	pe := providerError(t, r.err)
	if !pe.Truncated {
		t.Fatalf("want a truncated error, got %+v", pe)
	}
	if code, msg, _ := Describe(r.err, "m"); code != "stream_truncated" ||
		msg != "The model provider's stream broke off before the answer was complete." {
		t.Errorf("Describe = %q %q", code, msg)
	}
}

var (
	sse   = func(c providertest.Chunk) string { return "data: " + providertest.ChunkJSON(c) + "\n\n" }
	hello = providertest.Chunk{Content: "Hello"}
	world = providertest.Chunk{Content: ", world"}
	stop  = providertest.Chunk{FinishReason: "stop"}
)

var openAIDialectCases = []dialectCase{
	{
		name:   "content",
		script: providertest.Script{Chunks: providertest.Answer("Hello, world! How are you?", 5)},
		check: func(t *testing.T, r result) {
			wantAnswer("Hello, world! How are you?", "")(t, r)
			if r.finish() != "stop" {
				t.Errorf("finish = %q, want stop", r.finish())
			}
			for _, c := range r.chunks {
				if c.Role != "assistant" {
					t.Errorf("chunk role = %q", c.Role)
				}
			}
		},
	},
	{
		name: "reasoning_content",
		script: providertest.Script{Chunks: slices.Concat(
			providertest.ReasoningContent("Let me think about it.", 4), providertest.Answer("42", 1))},
		check: wantAnswer("42", "Let me think about it."),
	},
	{
		name: "reasoning key",
		script: providertest.Script{Chunks: slices.Concat(
			providertest.Reasoning("Thinking via the reasoning key.", 3), providertest.Answer("Done.", 2))},
		check: wantAnswer("Done.", "Thinking via the reasoning key."),
	},
	{
		name: "unicode and escapes",
		script: providertest.Script{Chunks: providertest.Answer(
			"Grüße 👋 \"quoted\" back\\slash\nnew line\ttab <html> & 日本語", 7)},
		check: wantAnswer("Grüße 👋 \"quoted\" back\\slash\nnew line\ttab <html> & 日本語", ""),
	},
	{
		name: "tool-call deltas merge by index",
		script: providertest.Script{Chunks: slices.Concat(
			interleave(providertest.ToolCall(0, "call_a", "search", `{"q":"go streams"}`, 3),
				providertest.ToolCall(1, "call_b", "calc", `{"x":1,"y":2}`, 4)),
			[]providertest.Chunk{{FinishReason: "tool_calls"}})},
		check: func(t *testing.T, r result) {
			if r.err != nil {
				t.Fatal(r.err)
			}
			tcs := r.merged.ToolCalls
			if len(tcs) != 2 {
				t.Fatalf("tool calls = %+v, want 2", tcs)
			}
			want := [][3]string{{"call_a", "search", `{"q":"go streams"}`}, {"call_b", "calc", `{"x":1,"y":2}`}}
			for i, w := range want {
				tc := tcs[i]
				if tc.ID != w[0] || tc.Function.Name != w[1] || tc.Function.Arguments != w[2] || tc.Type != "function" {
					t.Errorf("tool call %d = %+v, want %v", i, tc, w)
				}
			}
			if r.finish() != "tool_calls" {
				t.Errorf("finish = %q", r.finish())
			}
		},
	},
	{
		name: "usage with reasoning and cached tokens",
		script: providertest.Script{Chunks: providertest.Answer("ok", 1),
			Usage: &providertest.Usage{PromptTokens: 11, CompletionTokens: 7, ReasoningTokens: 3, CachedTokens: 5}},
		check: func(t *testing.T, r result) {
			wantAnswer("ok", "")(t, r)
			u := r.usage
			if u == nil || u.PromptTokens != 11 || u.CompletionTokens != 7 || u.TotalTokens != 18 ||
				u.CompletionTokensDetails.ReasoningTokens != 3 || u.PromptTokenDetails.CachedTokens != 5 {
				t.Errorf("usage = %+v", u)
			}
		},
	},
	{
		name: "keep-alive comments and blank lines",
		script: providertest.Script{Raw: []string{
			": keep-alive\n\n", sse(hello), ": ping\n", "\n", "event: message\n", sse(world), ": x\n\n",
			sse(stop), "data: [DONE]\n\n",
		}},
		check: wantAnswer("Hello, world", ""),
	},
	{
		name: "CRLF line endings",
		script: providertest.Script{Raw: []string{
			"data: " + providertest.ChunkJSON(hello) + "\r\n\r\n", ": keep-alive\r\n\r\n",
			"data: " + providertest.ChunkJSON(world) + "\r\n\r\n", "data: " + providertest.ChunkJSON(stop) + "\r\n\r\n",
			"data: [DONE]\r\n\r\n",
		}},
		check: wantAnswer("Hello, world", ""),
	},
	{
		name: "data without space",
		script: providertest.Script{Raw: []string{
			"data:" + providertest.ChunkJSON(hello) + "\n\n", "data:" + providertest.ChunkJSON(world) + "\n\n",
			"data:" + providertest.ChunkJSON(stop) + "\n\n", "data:[DONE]\n\n",
		}},
		check: wantAnswer("Hello, world", ""),
	},
	{
		name: "mid-stream error object",
		script: providertest.Script{Chunks: providertest.Answer("Hello there", 2),
			MidStreamError: &providertest.StreamError{After: 2, ErrorObject: providertest.ErrorObject{
				Message: "The server had an error while processing your request.", Type: "server_error"}}},
		check: func(t *testing.T, r result) {
			pe := providerError(t, r.err)
			if pe.Message != "The server had an error while processing your request." || pe.Type != "server_error" {
				t.Errorf("error = %+v", pe)
			}
			if r.content() != "Hello there" {
				t.Errorf("content before the error = %q", r.content())
			}
			code, msg, _ := Describe(r.err, "fast")
			if code != "provider_error" || !strings.Contains(msg, "The server had an error") {
				t.Errorf("Describe = %q %q", code, msg)
			}
		},
	},
	{
		name:   "dropped connection",
		script: providertest.Script{Chunks: providertest.Content("Hello wor", 3), Drop: true},
		check: func(t *testing.T, r result) {
			wantTruncated(t, r)
			if r.content() != "Hello wor" {
				t.Errorf("content = %q", r.content())
			}
		},
	},
	{
		name:   "clean end without [DONE] nor finish_reason",
		script: providertest.Script{Chunks: providertest.Content("Hello", 2), NoDone: true},
		check:  wantTruncated,
	},
	{
		name:   "clean end after finish_reason without [DONE]",
		script: providertest.Script{Chunks: providertest.Answer("Complete.", 2), NoDone: true},
		check:  wantAnswer("Complete.", ""),
	},
	{
		name: "role-only and empty chunks are skipped",
		script: providertest.Script{Raw: []string{
			`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n",
			`data: {"choices":[{"index":0,"delta":{"content":null}}]}` + "\n\n",
			sse(hello), sse(stop), "data: [DONE]\n\n",
		}},
		check: func(t *testing.T, r result) {
			wantAnswer("Hello", "")(t, r)
			if len(r.chunks) != 2 {
				t.Errorf("chunks = %d, want 2 (content, finish)", len(r.chunks))
			}
		},
	},
	{
		name: "long line over 1 MiB",
		script: providertest.Script{Raw: []string{
			sse(providertest.Chunk{Content: strings.Repeat("x", 1<<20+100)}), sse(stop), "data: [DONE]\n\n"}},
		check: wantAnswer(strings.Repeat("x", 1<<20+100), ""),
	},
}

// interleave alternates the chunks of a and b.
func interleave(a, b []providertest.Chunk) []providertest.Chunk {
	var out []providertest.Chunk
	for i := 0; i < max(len(a), len(b)); i++ {
		if i < len(a) {
			out = append(out, a[i])
		}
		if i < len(b) {
			out = append(out, b[i])
		}
	}
	return out
}

func TestOpenAIDialect(t *testing.T) {
	t.Parallel()
	for _, c := range openAIClients {
		for _, tc := range openAIDialectCases {
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				srv := providertest.New(t)
				srv.Enqueue(tc.script)
				m := newOpenAIModel(t, c, srv, nil)
				tc.check(t, run(t, testContext(t), m))
			})
		}
	}
}

func TestOpenAIHTTPErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		script     providertest.Script
		status     int
		retryable  bool
		retryAfter time.Duration
		code       string
		msgHas     []string
	}{
		{
			name: "500", status: 500, retryable: true, code: "provider_error",
			script: providertest.Script{Status: 500, Error: providertest.ErrorObject{Message: "upstream exploded", Type: "server_error"}},
			msgHas: []string{"HTTP 500", "model fast", "upstream exploded"},
		},
		{
			name: "429 with Retry-After", status: 429, retryable: true, retryAfter: 2 * time.Second, code: "rate_limited",
			script: providertest.Script{Status: 429, Header: map[string]string{"Retry-After": "2"},
				Error: providertest.ErrorObject{Message: "Rate limit reached", Type: "requests", Code: "rate_limit_exceeded"}},
			msgHas: []string{"rate-limiting", "fast", "2s"},
		},
		{
			name: "401", status: 401, code: "provider_auth",
			script: providertest.Script{Status: 401, Error: providertest.ErrorObject{
				Message: "Incorrect API key provided: sk-test-secret.", Type: "invalid_request_error", Code: "invalid_api_key"}},
			msgHas: []string{"The model provider rejected the credentials for model fast; check models.fast.api_key."},
		},
		{
			name: "400", status: 400, code: "provider_error",
			script: providertest.Script{Status: 400, Error: providertest.ErrorObject{
				Message: "This model's maximum context length is 8192 tokens.", Type: "invalid_request_error"}},
			msgHas: []string{"HTTP 400", "maximum context length"},
		},
		{
			name: "502 HTML from a proxy", status: 502, retryable: true, code: "provider_error",
			script: providertest.Script{Status: 502, ErrorBody: "<html><body>Bad Gateway</body></html>",
				Header: map[string]string{"Content-Type": "text/html"}},
			msgHas: []string{"HTTP 502 (Bad Gateway)"},
		},
	}
	for _, c := range openAIClients {
		for _, tc := range cases {
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				srv := providertest.New(t)
				srv.Enqueue(tc.script)
				m := newOpenAIModel(t, c, srv, nil)
				_, err := m.Stream(testContext(t), nil)
				pe := providerError(t, err)
				if pe.StatusCode != tc.status || pe.Retryable != tc.retryable || pe.RetryAfter != tc.retryAfter {
					t.Errorf("got status %d retryable %v retryAfter %v, want %d %v %v",
						pe.StatusCode, pe.Retryable, pe.RetryAfter, tc.status, tc.retryable, tc.retryAfter)
				}
				code, msg, retryable := Describe(err, "fast")
				if code != tc.code || retryable != tc.retryable {
					t.Errorf("Describe code %q retryable %v, want %q %v", code, retryable, tc.code, tc.retryable)
				}
				for _, s := range tc.msgHas {
					if !strings.Contains(msg, s) {
						t.Errorf("message %q lacks %q", msg, s)
					}
				}
				if strings.Contains(msg, "sk-test-secret") || strings.Contains(err.Error(), "sk-test-secret") {
					t.Errorf("the API key leaked: %q / %q", msg, err)
				}
			})
		}
	}
}

func TestOpenAIHeaderTimeout(t *testing.T) {
	t.Parallel()
	for _, c := range openAIClients {
		t.Run(c.name+"/no headers in time", func(t *testing.T) {
			t.Parallel()
			srv := providertest.New(t)
			gate := providertest.NewGate()
			defer gate.Release()
			srv.Enqueue(providertest.Script{HoldHeaders: gate, Chunks: providertest.Answer("late", 1)})
			m := newOpenAIModel(t, c, srv, func(cfg *OpenAIConfig) { cfg.HeaderTimeout = 100 * time.Millisecond })
			_, err := m.Stream(testContext(t), nil)
			pe := providerError(t, err)
			if !pe.Retryable {
				t.Errorf("a header timeout should be retryable: %+v", pe)
			}
			if code, _, _ := Describe(err, "m"); code != "timeout" {
				t.Errorf("Describe code = %q, want timeout (%v)", code, err)
			}
		})
		t.Run(c.name+"/stream outlives the header timeout", func(t *testing.T) {
			t.Parallel()
			srv := providertest.New(t)
			srv.Enqueue(providertest.Script{Chunks: providertest.Answer("slow but steady", 5), Delay: 60 * time.Millisecond})
			m := newOpenAIModel(t, c, srv, func(cfg *OpenAIConfig) { cfg.HeaderTimeout = 100 * time.Millisecond })
			wantAnswer("slow but steady", "")(t, run(t, testContext(t), m))
		})
	}
}

func TestOpenAIUnreachable(t *testing.T) {
	t.Parallel()
	for _, c := range openAIClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.New(t)
			base := srv.BaseURL()
			srv.Close() // nothing listens there any more
			m, err := c.new(OpenAIConfig{BaseURL: base, Model: "m", HTTPClient: httpClient(t)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Stream(testContext(t), nil)
			pe := providerError(t, err)
			if !pe.Retryable {
				t.Errorf("a refused connection should be retryable")
			}
			code, msg, _ := Describe(err, "local")
			host := strings.TrimPrefix(strings.TrimSuffix(base, "/v1"), "http://")
			if code != "provider_unreachable" || !strings.Contains(msg, host) {
				t.Errorf("Describe = %q %q, want provider_unreachable naming %s", code, msg, host)
			}
		})
	}
}

func TestOpenAIStatusOKWithJSONAnswer(t *testing.T) {
	t.Parallel()
	body := `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",` +
		`"content":"Whole answer.","reasoning_content":"hm"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
	srv := providertest.New(t)
	srv.Enqueue(providertest.Script{Header: map[string]string{"Content-Type": "application/json"}, Raw: []string{body}})
	m := newOpenAIModel(t, openAIClients[0], srv, nil)
	r := run(t, testContext(t), m)
	wantAnswer("Whole answer.", "hm")(t, r)
	if r.usage == nil || r.usage.TotalTokens != 5 || r.finish() != "stop" {
		t.Errorf("usage %+v finish %q", r.usage, r.finish())
	}
}

func TestOpenAIRequestHeaders(t *testing.T) {
	t.Parallel()
	for _, c := range openAIClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.New(t)
			withKey := newOpenAIModel(t, c, srv, nil)
			noKey := newOpenAIModel(t, c, srv, func(cfg *OpenAIConfig) { cfg.APIKey = "" })
			run(t, testContext(t), withKey)
			run(t, testContext(t), noKey)
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("requests = %d", len(reqs))
			}
			if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-test-secret" {
				t.Errorf("Authorization = %q", got)
			}
			if _, ok := reqs[1].Header["Authorization"]; ok {
				t.Errorf("Authorization sent without an API key: %q", reqs[1].Header.Get("Authorization"))
			}
			if reqs[0].Path != "/v1/chat/completions" || reqs[0].Method != http.MethodPost {
				t.Errorf("request %s %s", reqs[0].Method, reqs[0].Path)
			}
			if reqs[0].Body["stream"] != true {
				t.Errorf("stream = %v", reqs[0].Body["stream"])
			}
			so, _ := reqs[0].Body["stream_options"].(map[string]any)
			if so["include_usage"] != true {
				t.Errorf("stream_options = %v", reqs[0].Body["stream_options"])
			}
		})
	}
}
