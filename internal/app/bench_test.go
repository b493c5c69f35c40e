package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// chunkSource is a provider response body generated in memory: n content
// chunks in the OpenAI streaming format, pre-rendered, then [DONE]. It keeps
// the provider's own cost out of the measurement.
type chunkSource struct {
	n, sent int
	chunk   []byte
	buf     bytes.Reader
}

func newChunkSource(n int) *chunkSource {
	c := `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench",` +
		`"choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}` + "\n\n"
	return &chunkSource{n: n, chunk: []byte(c)}
}

func (s *chunkSource) Read(p []byte) (int, error) {
	if s.buf.Len() == 0 {
		switch {
		case s.sent < s.n:
			s.buf.Reset(s.chunk)
		case s.sent == s.n:
			s.buf.Reset([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
		default:
			return 0, io.EOF
		}
		s.sent++
	}
	// One chunk per Read, as a network read of a flushed chunk would be.
	return s.buf.Read(p)
}

func (s *chunkSource) Close() error { return nil }

// memoryProvider answers every chat completion with a chunkSource.
type memoryProvider struct{ n int }

func (m memoryProvider) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return &http.Response{
		StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"text/event-stream"}},
		Body:    newChunkSource(m.n),
		Request: r,
	}, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchApp(b *testing.B, cfg *config.Config, client *http.Client) (*httptest.Server, string) {
	b.Helper()
	a, err := app.New(context.Background(), cfg, app.Options{Logger: zap.NewNop(), HTTPClient: client})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	b.Cleanup(func() { srv.Close(); _ = a.Close() })
	resp, err := http.Post(srv.URL+"/api/v1/sessions", "application/json", strings.NewReader(`{"mode":"chat"}`))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var s handler.SessionJSON
	_ = json.NewDecoder(resp.Body).Decode(&s)
	return srv, s.ID
}

func benchConfig(b *testing.B, baseURL string) *config.Config {
	cfg := config.Default()
	cfg.Storage.SQLite.Path = filepath.Join(b.TempDir(), "bench.db")
	cfg.Models = map[string]config.Model{"default": {Provider: "openai", BaseURL: baseURL, Model: "bench", Retries: intp(0)}}
	cfg.DefaultMode = "chat"
	cfg.Titles.Enabled = false // BenchmarkTimeToFirstAnswerByteTitles measures them
	cfg.Plugins["load_history"]["compaction"] = map[string]any{"enabled": false}
	return cfg
}

// BenchmarkStreamedDelta measures the whole server path of one answer
// delta: the provider chunk read and decoded by the lean client, the eino
// stream, the think splitter and blocks, the bus with its recorder,
// persister and logger, JSON encoding, the memory stream store, and the
// SSE reader writing and flushing it to a real loopback connection. One
// request streams b.N deltas; the client only counts bytes. cpu-ns/delta
// is the process's user+system CPU time per delta.
func BenchmarkStreamedDelta(b *testing.B) {
	client := &http.Client{Transport: memoryProvider{n: b.N}}
	srv, session := benchApp(b, benchConfig(b, "http://provider.invalid/v1"), client)
	body := strings.NewReader(`{"content":"benchmark question"}`)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	resp, err := http.Post(srv.URL+"/api/v1/sessions/"+session+"/messages", "application/json", body)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	cpu := cpuTime() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/delta")
	b.ReportMetric(float64(n)/float64(b.N), "sse-bytes/delta")
}

// BenchmarkTimeToFirstAnswerByte compares, at concurrency 1, the time to
// the first answer byte when reading the fake provider directly with the
// time through chatpipe's chat mode (POST a question, read SSE until the
// first answer.delta). The difference is what chatpipe adds: request
// parsing, saving the question and reserving the answer in SQLite, the
// chain, the bus and the stream store.
func BenchmarkTimeToFirstAnswerByte(b *testing.B) {
	provider := providertest.New(b)
	provider.SetDefault(providertest.Script{Chunks: providertest.Answer("first byte then the rest of the answer", 8), NoRolePreamble: true})

	b.Run("direct", func(b *testing.B) {
		client := &http.Client{Transport: &http.Transport{}}
		req := `{"model":"m","stream":true,"messages":[{"role":"user","content":"q"}]}`
		for b.Loop() {
			resp, err := client.Post(provider.BaseURL()+"/chat/completions", "application/json", strings.NewReader(req))
			if err != nil {
				b.Fatal(err)
			}
			br := bufio.NewReader(resp.Body)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					b.Fatal("no content chunk")
				}
				if strings.Contains(line, `"content":"`) {
					break
				}
			}
			b.StopTimer()
			_, _ = io.Copy(io.Discard, br)
			resp.Body.Close()
			b.StartTimer()
		}
	})

	// Each question goes to a new session, so neither mode loads history
	// and rag does not call the model to rewrite.
	ask := func(b *testing.B, srv *httptest.Server, mode string) {
		client := &http.Client{Transport: &http.Transport{}}
		for b.Loop() {
			b.StopTimer()
			session := newSession(b, client, srv.URL, mode)
			b.StartTimer()
			firstAnswerDelta(b, client, srv.URL, session, "How do I resume a stream after a dropped connection?")
		}
	}
	b.Run("chatpipe-chat", func(b *testing.B) {
		srv, _ := benchApp(b, benchConfig(b, provider.BaseURL()), &http.Client{Transport: &http.Transport{}})
		ask(b, srv, "chat")
	})
	b.Run("chatpipe-rag", func(b *testing.B) {
		srv, _ := benchApp(b, benchConfig(b, provider.BaseURL()), &http.Client{Transport: &http.Transport{}})
		ingestBenchDocs(b, &http.Client{Transport: &http.Transport{}}, srv.URL)
		ask(b, srv, "rag")
	})
}

// ingestBenchDocs loads a small knowledge base: 200 documents, one of them
// about resuming a stream.
func ingestBenchDocs(b *testing.B, client *http.Client, base string) {
	b.Helper()
	for i := range 200 {
		doc := fmt.Sprintf("# Note %d\n\nParagraph %d about gardening, cooking and cycling, nothing else.", i, i)
		if i == 100 {
			doc = "# Resume\n\nAfter a dropped connection, resume the stream with Last-Event-ID or ?after=N."
		}
		body, _ := json.Marshal(map[string]string{"content": doc})
		resp, err := client.Post(base+"/api/v1/knowledge/documents", "application/json", bytes.NewReader(body))
		if err != nil || resp.StatusCode != http.StatusCreated {
			b.Fatalf("ingest: %v %v", err, resp.Status)
		}
		resp.Body.Close()
	}
}

// firstAnswerDelta asks question in session and reads the SSE stream up
// to the first answer.delta (timed); the rest is read with the timer
// stopped and returned.
func firstAnswerDelta(b *testing.B, client *http.Client, base, session, question string) []byte {
	b.Helper()
	body, _ := json.Marshal(map[string]string{"content": question})
	resp, err := client.Post(base+"/api/v1/sessions/"+session+"/messages", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			b.Fatal("no answer delta")
		}
		if line == "event: answer.delta\n" {
			break
		}
	}
	b.StopTimer()
	defer b.StartTimer()
	rest, _ := io.ReadAll(br)
	return rest
}

func newSession(b *testing.B, client *http.Client, base, mode string) string {
	resp, err := client.Post(base+"/api/v1/sessions", "application/json", strings.NewReader(`{"mode":"`+mode+`"}`))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var s handler.SessionJSON
	_ = json.NewDecoder(resp.Body).Decode(&s)
	return s.ID
}

// BenchmarkRequestOverhead measures what API keys, the rate limiter and
// metrics add to one request (GET /api/v1/sessions, served in process),
// against the same server with all three off.
func BenchmarkRequestOverhead(b *testing.B) {
	for _, tc := range []struct {
		name string
		edit func(*config.Config)
	}{
		{"bare", func(c *config.Config) { c.Metrics.Enabled = false }},
		{"auth+limits+metrics", func(c *config.Config) {
			c.Auth.Keys = []config.AuthKey{{Tenant: "acme", Key: "acme-0123456789abcdef"}}
			c.Limits.RatePerSecond, c.Limits.RateBurst = 1e9, 1000
			c.Limits.MaxConcurrentStreams = 100
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := benchConfig(b, "http://provider.invalid/v1")
			tc.edit(cfg)
			a, err := app.New(context.Background(), cfg, app.Options{Logger: zap.NewNop()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = a.Close() })
			h := a.Handler()
			req := httptest.NewRequest("GET", "/api/v1/sessions", nil)
			req.Header.Set("Authorization", "Bearer acme-0123456789abcdef")
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

// BenchmarkStreamedDeltaMetrics is BenchmarkStreamedDelta with metrics off
// and on: what metrics add per delta.
func BenchmarkStreamedDeltaMetrics(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "metrics-off", true: "metrics-on"}[on], func(b *testing.B) {
			cfg := benchConfig(b, "http://provider.invalid/v1")
			cfg.Metrics.Enabled = on
			client := &http.Client{Transport: memoryProvider{n: b.N}}
			srv, session := benchApp(b, cfg, client)
			b.ReportAllocs()
			b.ResetTimer()
			resp, err := http.Post(srv.URL+"/api/v1/sessions/"+session+"/messages", "application/json",
				strings.NewReader(`{"content":"benchmark question"}`))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
}
