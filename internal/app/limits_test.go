package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

func errorOf(t *testing.T, resp *http.Response) handler.ErrorBody {
	t.Helper()
	defer resp.Body.Close()
	var e handler.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return e
}

func TestRequestRateLimitAnswers429WithRetryAfter(t *testing.T) {
	h := newHarness(t, withTwoTenants, func(c *config.Config) {
		c.Limits.RatePerSecond = 0.5
		c.Limits.RateBurst = 3
	})
	acme, beta := h.as(acmeKey), h.as(betaKey)
	for i := range 3 {
		if code := acme.call("GET", "/api/v1/sessions", "", nil); code != http.StatusOK {
			t.Fatalf("request %d within the burst: %d", i, code)
		}
	}
	resp := acme.do(context.Background(), "POST", "/api/v1/sessions", `{"title":"over the limit"}`)
	retry := resp.Header.Get("Retry-After")
	e := errorOf(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests || e.Error.Code != "rate_limited" || e.Error.Message == "" {
		t.Fatalf("over the rate: %d %+v", resp.StatusCode, e)
	}
	if n, err := strconv.Atoi(retry); err != nil || n < 1 {
		t.Fatalf("Retry-After = %q", retry)
	}
	// Another key has its own bucket, and nothing was saved for the rejected request.
	var list struct{ Sessions []handler.SessionJSON }
	if code := beta.call("GET", "/api/v1/sessions", "", &list); code != http.StatusOK {
		t.Fatalf("another key: %d", code)
	}
	// Once the bucket refills, acme sees that nothing was saved for the
	// rejected request.
	n, _ := strconv.Atoi(retry)
	time.Sleep(time.Duration(n) * time.Second)
	var mine struct{ Sessions []handler.SessionJSON }
	if code := acme.call("GET", "/api/v1/sessions", "", &mine); code != http.StatusOK || len(mine.Sessions) != 0 {
		t.Fatalf("after the limit: %d, %d sessions (the rejected request must save nothing)", code, len(mine.Sessions))
	}
}

func TestConcurrentStreamLimitPerKey(t *testing.T) {
	h := newHarness(t, withTwoTenants, func(c *config.Config) { c.Limits.MaxConcurrentStreams = 1 })
	acme, beta := h.as(acmeKey), h.as(betaKey)
	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.SetDefault(providertest.Script{Chunks: providertest.Answer("held answer", 2), Hold: gate, HoldAfter: 1})
	session := acme.createSession()
	first := acme.ask(session, "first")
	_ = gate.WaitReached(ctxTimeout(t))

	resp := acme.do(context.Background(), "POST", "/api/v1/sessions/"+session+"/messages", `{"content":"second"}`)
	retry := resp.Header.Get("Retry-After")
	e := errorOf(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests || e.Error.Code != "too_many_streams" || retry == "" {
		t.Fatalf("second concurrent answer: %d %+v (Retry-After %q)", resp.StatusCode, e, retry)
	}
	if msgs := acme.messages(session); len(msgs) != 2 {
		t.Fatalf("the rejected question was saved: %d messages", len(msgs))
	}
	// Another key is not affected.
	betaStream := beta.ask(beta.createSession(), "beta's question")
	// The slot is freed when the generation ends, even if its reader left early.
	first.close()
	gate.Release()
	h.waitDone(first.messageID())
	betaStream.all()
	h.provider.SetDefault(providertest.Script{Chunks: providertest.Answer("third", 1)})
	if fin := finished(t, acme.ask(session, "third").all()); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("after the first answer ended: %+v", fin)
	}
}

func TestCORSAllowsOnlyListedOrigins(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.CORS.AllowedOrigins = []string{"https://chat.example.com"} })
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", h.url("/api/v1/sessions"), nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	ok := preflight("https://chat.example.com")
	if ok.StatusCode != http.StatusNoContent || ok.Header.Get("Access-Control-Allow-Origin") != "https://chat.example.com" ||
		!strings.Contains(ok.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("allowed origin preflight: %d %v", ok.StatusCode, ok.Header)
	}
	if bad := preflight("https://evil.example"); bad.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("unlisted origin allowed: %v", bad.Header)
	}
	resp := h.do(context.Background(), "GET", "/api/v1/sessions", "", "Origin", "https://chat.example.com")
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "https://chat.example.com" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "X-Message-Id") {
		t.Fatalf("actual request: %v", resp.Header)
	}
}

// scrape reads /metrics into name{labels} → value.
func scrape(t *testing.T, h *harness) map[string]float64 {
	t.Helper()
	resp := h.do(context.Background(), "GET", "/metrics", "")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

func TestMetricsMoveAfterAStreamedAnswer(t *testing.T) {
	h := newHarness(t)
	h.provider.Enqueue(providertest.Script{Chunks: append(providertest.ReasoningContent("think", 2), providertest.Answer("an answer", 3)...),
		Usage: &providertest.Usage{PromptTokens: 12, CompletionTokens: 5}})
	before := scrape(t, h)
	evs := h.ask(h.createSession(), "q").all()
	h.waitDone(evs[0].StreamID)
	after := scrape(t, h)
	for name, want := range map[string]float64{
		`chatpipe_streams_total{mode="chat",status="completed"}`:                    1,
		`gen_ai_client_token_usage_total{mode="chat",type="input"}`:                 12,
		`gen_ai_client_token_usage_total{mode="chat",type="output"}`:                5,
		`gen_ai_server_time_to_first_token_seconds_count{mode="chat"}`:              1,
		`chatpipe_stage_duration_seconds_count{stage="generate",status="finished"}`: 1,
	} {
		if got := after[name] - before[name]; got != want {
			t.Errorf("%s moved by %v, want %v", name, got, want)
		}
	}
	if d := after["chatpipe_sse_events_total"] - before["chatpipe_sse_events_total"]; d != float64(len(evs)) {
		t.Errorf("sse events moved by %v, want %d", d, len(evs))
	}
	if after["chatpipe_sse_bytes_total"] <= before["chatpipe_sse_bytes_total"] {
		t.Error("sse bytes did not move")
	}
	if after[`chatpipe_http_requests_total{method="POST",route="/api/v1/sessions",status="201"}`] < 1 {
		t.Error("http requests not counted by route")
	}
	if after["chatpipe_active_streams"] != 0 {
		t.Errorf("active streams = %v after the answer ended", after["chatpipe_active_streams"])
	}
	for name := range after {
		if strings.Contains(name, "route=\"/api/v1/sessions/0") {
			t.Fatalf("a raw path with an id became a label: %s", name)
		}
	}
}

// The log level follows config.yaml without a restart.
func TestLogLevelChangesOnReload(t *testing.T) {
	provider := providertest.New(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	write := func(level string) {
		yaml := "log:\n  level: " + level + "\nstorage:\n  sqlite:\n    path: " + filepath.Join(dir, "db") +
			"\nmodels:\n  default:\n    provider: openai\n    base_url: " + provider.BaseURL() + "\n    model: m\n"
		if err := os.WriteFile(path+".tmp", []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	write("info")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	level := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	a, err := app.New(context.Background(), cfg, app.Options{ConfigPath: path, Logger: zap.NewNop(), Level: &level})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	write("debug")
	deadline := time.Now().Add(10 * time.Second)
	for level.Level() != zapcore.DebugLevel {
		if time.Now().After(deadline) {
			t.Fatalf("log level still %v after the reload", level.Level())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
