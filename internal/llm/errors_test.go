package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
)

func TestDescribe(t *testing.T) {
	t.Parallel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cases := []struct {
		name      string
		err       error
		code      string
		message   string // exact, when set
		has       []string
		retryable bool
	}{
		{name: "nil"},
		{name: "canceled", err: fmt.Errorf("stream: %w", context.Canceled), code: "canceled",
			message: "The request was canceled."},
		{name: "canceled inside a provider error", err: &ProviderError{Err: context.Canceled}, code: "canceled"},
		{name: "429", err: &ProviderError{StatusCode: 429, Retryable: true, RetryAfter: 20 * time.Second},
			code: "rate_limited", retryable: true,
			message: "The model provider is rate-limiting requests for model fast; try again in 20s."},
		{name: "429 without Retry-After", err: &ProviderError{StatusCode: 429, Retryable: true},
			code: "rate_limited", retryable: true, has: []string{"try again shortly"}},
		{name: "quota", err: &ProviderError{StatusCode: 429, Code: "insufficient_quota"}, code: "rate_limited",
			has: []string{"quota is exhausted"}},
		{name: "rate limit in the stream", err: &ProviderError{Type: "rate_limit_error", Retryable: true},
			code: "rate_limited", retryable: true},
		{name: "401", err: &ProviderError{StatusCode: 401, Message: "Incorrect API key provided: sk-abc***xyz"},
			code:    "provider_auth",
			message: "The model provider rejected the credentials for model fast; check models.fast.api_key."},
		{name: "403", err: &ProviderError{StatusCode: 403}, code: "provider_auth"},
		{name: "500", err: &ProviderError{StatusCode: 500, Retryable: true, Message: "boom."}, code: "provider_error",
			retryable: true, message: "The model provider returned HTTP 500 (Internal Server Error) for model fast: boom."},
		{name: "404", err: &ProviderError{StatusCode: 404}, code: "provider_error",
			message: "The model provider returned HTTP 404 (Not Found) for model fast."},
		{name: "header timeout", err: &ProviderError{Retryable: true, Err: ErrHeaderTimeout}, code: "timeout",
			retryable: true, message: "The model provider for model fast did not respond in time."},
		{name: "deadline", err: context.DeadlineExceeded, code: "timeout"},
		{name: "truncated", err: &ProviderError{Truncated: true, Err: io.ErrUnexpectedEOF}, code: "stream_truncated",
			message: "The model provider's stream broke off before the answer was complete."},
		{name: "connection refused", err: &ProviderError{Host: "localhost:11434", Retryable: true, Err: refused},
			code: "provider_unreachable", retryable: true,
			message: "Could not reach the model provider for model fast at localhost:11434 (connection refused)."},
		{name: "DNS", err: &ProviderError{Host: "api.nowhere.invalid:443", Retryable: true,
			Err: &net.DNSError{Err: "no such host", Name: "api.nowhere.invalid", IsNotFound: true}},
			code: "provider_unreachable", retryable: true, has: []string{"api.nowhere.invalid:443", "host name not found"}},
		{name: "stream error message", err: streamError("Model overloaded", "server_error", "", "h:1"),
			code: "provider_error", retryable: true,
			message: "The model provider reported an error for model fast: Model overloaded."},
		{name: "unknown error", err: errors.New("https://user:pw@host/v1?key=sk-secret failed"), code: "provider_error",
			message: "The call to the model provider for model fast failed."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, msg, retryable := Describe(c.err, "fast")
			if code != c.code || retryable != c.retryable {
				t.Errorf("code %q retryable %v, want %q %v (%s)", code, retryable, c.code, c.retryable, msg)
			}
			if c.message != "" && msg != c.message {
				t.Errorf("message\n got %q\nwant %q", msg, c.message)
			}
			for _, h := range c.has {
				if !strings.Contains(msg, h) {
					t.Errorf("message %q lacks %q", msg, h)
				}
			}
			for _, secret := range []string{"sk-", "pw@", "key="} {
				if strings.Contains(msg, secret) {
					t.Errorf("message %q leaks %q", msg, secret)
				}
			}
		})
	}
}

func TestDescribeRealConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	m, err := NewOpenAI(OpenAIConfig{BaseURL: "http://" + addr + "/v1", Model: "m", HTTPClient: httpClient(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Stream(testContext(t), nil)
	code, msg, retryable := Describe(err, "local")
	if code != "provider_unreachable" || !retryable || !strings.Contains(msg, addr) || !strings.Contains(msg, "refused") {
		t.Errorf("Describe = %q %q %v", code, msg, retryable)
	}
}

func TestStatusError(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 400)
	cases := []struct {
		name               string
		body               string
		message, typ, code string
	}{
		{"openai", `{"error":{"message":"Bad key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			"Bad key", "invalid_request_error", "invalid_api_key"},
		{"numeric code", `{"error":{"message":"m","type":"t","code":429}}`, "m", "t", "429"},
		{"error string", `{"error":"model not found"}`, "model not found", "", ""},
		{"vllm", `{"object":"error","message":"too long","type":"BadRequestError","param":null,"code":400}`,
			"too long", "BadRequestError", "400"},
		{"fastapi detail", `{"detail":"Not authenticated"}`, "Not authenticated", "", ""},
		{"message list", `{"error":{"message":["a","b"],"type":"x"}}`, "a, b", "x", ""},
		{"plain text", "upstream connect error\n", "upstream connect error", "", ""},
		{"html", "<html><h1>502</h1></html>", "", "", ""},
		{"empty", "", "", "", ""},
		{"long", `{"error":{"message":"` + long + `"}}`, "…", "", ""}, // one token: never cut in two
		{"long words", `{"error":{"message":"` + strings.Repeat("ab ", 99) + `key gsk_0123456789abcdef"}}`,
			strings.TrimSpace(strings.Repeat("ab ", 99)) + " key…", "", ""},
		{"secret echoed", `{"error":{"message":"Incorrect API key provided: sk-proj-abcdef. See https://u:p@x.io/k?token=1."}}`,
			"Incorrect API key provided: [redacted] See https://x.io/k.", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pe := statusError(400, nil, []byte(c.body), "h")
			if pe.Message != c.message || pe.Type != c.typ || pe.Code != c.code {
				t.Errorf("got %q %q %q, want %q %q %q", pe.Message, pe.Type, pe.Code, c.message, c.typ, c.code)
			}
		})
	}
}

func TestRetryableStatus(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]bool{400: false, 401: false, 403: false, 404: false, 408: true, 409: true,
		422: false, 429: true, 500: true, 502: true, 503: true, 504: true} {
		if got := statusError(status, nil, nil, "").Retryable; got != want {
			t.Errorf("status %d retryable = %v, want %v", status, got, want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":     0,
		"2":    2 * time.Second,
		"0.5":  500 * time.Millisecond,
		"-1":   0,
		"soon": 0,
		now.Add(30 * time.Second).Format(http.TimeFormat): 30 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	}
	for in, want := range cases {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestProviderErrorUnwrapsButNeverToEOF(t *testing.T) {
	t.Parallel()
	pe := truncatedError(context.Background(), io.ErrUnexpectedEOF, true, "h")
	if errors.Is(pe, io.EOF) {
		t.Fatal("a truncated stream must not look like a normal end (io.EOF)")
	}
	if !errors.Is(pe, io.ErrUnexpectedEOF) || pe.Retryable {
		t.Errorf("pe = %+v", pe)
	}
	if !truncatedError(context.Background(), io.ErrUnexpectedEOF, false, "h").Retryable {
		t.Error("a stream that broke before any chunk should be retryable")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if pe := truncatedError(ctx, io.ErrUnexpectedEOF, false, "h"); !errors.Is(pe, context.Canceled) || pe.Retryable {
		t.Errorf("after cancel: %+v", pe)
	}
}

func TestHostOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://api.openai.com/v1":    "api.openai.com:443",
		"http://user:pw@localhost/v1":  "localhost:80",
		"http://127.0.0.1:11434":       "127.0.0.1:11434",
		"http://[::1]:8000/v1?key=abc": "[::1]:8000",
		"not a url":                    "",
	} {
		if got := hostOf(in); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMidStreamClassifiesWhatANewAttemptMayFix(t *testing.T) {
	for _, c := range []struct {
		name   string
		err    error
		status string
		retry  bool
	}{
		{"dropped connection", &ProviderError{Truncated: true, Err: io.ErrUnexpectedEOF}, eventbus.ModelCallFailed, true},
		{"stalled read", &ProviderError{Truncated: true, Err: os.ErrDeadlineExceeded}, eventbus.ModelCallTimeout, true},
		{"provider's timeout error", streamError("upstream timed out", "timeout", "", "h"), eventbus.ModelCallTimeout, true},
		{"malformed chunk", &ProviderError{Malformed: true, Err: errors.New("bad json")}, eventbus.ModelCallMalformed, true},
		{"provider's error object", streamError("overloaded", "server_error", "", "h"), eventbus.ModelCallFailed, false},
		{"stopped", &ProviderError{Err: context.Canceled}, eventbus.ModelCallFailed, false},
		{"run deadline", &ProviderError{Truncated: true, Err: context.DeadlineExceeded}, eventbus.ModelCallFailed, false},
		{"not a provider error", errors.New("other"), eventbus.ModelCallFailed, false},
	} {
		status, retry := MidStream(c.err)
		if status != c.status || retry != c.retry {
			t.Errorf("%s: MidStream = %s, %v; want %s, %v", c.name, status, retry, c.status, c.retry)
		}
	}
}
