package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/internal/sseclient"
)

// benchResearch scripts the fake provider for research answers of n
// sub-questions: every model call streams `chunks` chunks `delay` apart;
// a sub-researcher makes two calls (a knowledge_search, then its finding).
// hold, when set, holds every sub-researcher's first call after one chunk.
func benchResearch(b *testing.B, n, width, chunks int, delay time.Duration, hold *providertest.Gate) (*httptest.Server, *providertest.Server) {
	b.Helper()
	provider := providertest.New(b)
	plan := planText(n)
	words := strings.TrimSpace(strings.Repeat("word ", chunks))
	provider.SetResponder(func(r providertest.Request) providertest.Script {
		user, toolsDone := lastUser(r)
		switch {
		case strings.Contains(user, "Plan the research"):
			return providertest.Script{Chunks: providertest.Answer(plan, chunks), Delay: delay}
		case strings.Contains(user, "Write a research report"), toolsDone:
			return providertest.Script{Chunks: providertest.Answer(words, chunks), Delay: delay}
		}
		sc := providertest.Script{Chunks: append(providertest.ToolCall(0, "call_s", "knowledge_search",
			`{"query":"`+words+`"}`, chunks), providertest.Chunk{FinishReason: "tool_calls"}), Delay: delay}
		if hold != nil {
			sc.Hold, sc.HoldAfter = hold, 1
		}
		return sc
	})
	cfg := benchConfig(b, provider.BaseURL())
	cfg.Plugins["research_plan"]["max_questions"] = n
	cfg.Plugins["research_run"]["width"] = width
	cfg.Plugins["research_run"]["max_tokens"] = 100000
	srv, _ := benchApp(b, cfg, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}})
	return srv, provider
}

func planText(n int) string {
	var plan strings.Builder
	for i := range n {
		fmt.Fprintf(&plan, "%d. Topic %d?\n", i+1, i+1)
	}
	return plan.String()
}

// askResearch posts a question in a new research session and returns the
// open event stream.
func askResearch(b *testing.B, srv *httptest.Server) *http.Response {
	b.Helper()
	resp, err := http.Post(srv.URL+"/api/v1/sessions", "application/json", strings.NewReader(`{"mode":"research"}`))
	if err != nil {
		b.Fatal(err)
	}
	var s handler.SessionJSON
	_ = jsonDecode(resp, &s)
	resp.Body.Close()
	resp, err = http.Post(srv.URL+"/api/v1/sessions/"+s.ID+"/messages", "application/json",
		strings.NewReader(`{"content":"Research every topic."}`))
	if err != nil {
		b.Fatal(err)
	}
	return resp
}

// countEvents reads a stream to its end and counts its events.
func countEvents(b *testing.B, resp *http.Response) int {
	b.Helper()
	defer resp.Body.Close()
	rd := sseclient.NewReader(resp.Body)
	n := 0
	for {
		f, err := rd.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		if f.Event != "" {
			n++
		}
		if f.Event == string(eventbus.TypeStreamFinished) && !strings.Contains(f.Data, `"status":"completed"`) {
			b.Fatalf("research did not complete: %s", f.Data)
		}
	}
}

// BenchmarkResearchWidth is one research answer of 6 sub-questions per
// op on the fake provider, every model call streaming 10 chunks 3 ms apart
// (about 30 ms a call, 2 calls a sub-researcher): width=1 runs the
// sub-researchers one after another, width=6 all at once. The ratio of
// their ns/op is the parallel speed-up; cpu-ns/op is the process's CPU.
func BenchmarkResearchWidth(b *testing.B) {
	for _, width := range []int{1, 6} {
		b.Run(fmt.Sprintf("width=%d", width), func(b *testing.B) {
			srv, _ := benchResearch(b, 6, width, 10, 3*time.Millisecond, nil)
			events := 0
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for b.Loop() {
				events += countEvents(b, askResearch(b, srv))
			}
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
		})
	}
}

// BenchmarkResearchEvents streams research answers as fast as the fake
// provider can write: 6 sub-researchers at once, every call 400 chunks
// with no delay. events/s is the sustained rate of events on the stream
// (all of them written to the store and sent to the reader);
// cpu-ns/event the CPU each costs.
func BenchmarkResearchEvents(b *testing.B) {
	srv, _ := benchResearch(b, 6, 6, 400, 0, nil)
	events := 0
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for b.Loop() {
		events += countEvents(b, askResearch(b, srv))
	}
	wall, cpu := time.Since(start), cpuTime()-cpu0
	b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(events), "cpu-ns/event")
}

// BenchmarkResearchMemoryPerSubagent holds 16 sub-researchers in the
// middle of their first model call and measures the live heap and the
// goroutines they add (after a GC), per sub-researcher. The fake provider
// runs in the same process: its side of each held call is included.
func BenchmarkResearchMemoryPerSubagent(b *testing.B) {
	const subs = 16
	var heap, goroutines float64
	planChunks := len(providertest.Answer(planText(subs), 4))
	for b.Loop() {
		b.StopTimer()
		gate := providertest.NewGate()
		srv, provider := benchResearch(b, subs, subs, 4, 0, gate)
		before, g0 := liveHeap(), runtime.NumGoroutine()
		b.StartTimer()
		resp := askResearch(b, srv)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		// Every sub-researcher's call has streamed its first chunk and waits.
		if err := provider.WaitChunks(ctx, planChunks+subs); err != nil {
			b.Fatal(err)
		}
		cancel()
		b.StopTimer()
		heap += float64(liveHeap()-before) / subs
		goroutines += float64(runtime.NumGoroutine()-g0) / subs
		gate.Release()
		countEvents(b, resp)
		srv.Close()
		b.StartTimer()
	}
	b.ReportMetric(heap/float64(b.N), "heap-B/subagent")
	b.ReportMetric(goroutines/float64(b.N), "goroutines/subagent")
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
