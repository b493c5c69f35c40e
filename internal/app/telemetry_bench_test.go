package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/providertest"
)

// BenchmarkStreamedDeltaTracing is BenchmarkStreamedDelta with tracing off
// and on (exporting to an in-process OTLP collector): spans are per stage
// and per call, so the per-delta cost and allocations should not move.
func BenchmarkStreamedDeltaTracing(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "tracing-off", true: "tracing-on"}[on], func(b *testing.B) {
			cfg := benchConfig(b, "http://provider.invalid/v1")
			if on {
				rcv := newOTLPReceiver(b)
				cfg.Telemetry.Traces.Enabled = true
				cfg.Telemetry.Traces.Endpoint = rcv.URL()
			}
			client := &http.Client{Transport: memoryProvider{n: b.N}}
			srv, session := benchApp(b, cfg, client)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			resp, err := http.Post(srv.URL+"/api/v1/sessions/"+session+"/messages", "application/json",
				strings.NewReader(`{"content":"benchmark question"}`))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			cpu := cpuTime() - cpu0
			b.StopTimer()
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/delta")
		})
	}
}

// BenchmarkTimeToFirstAnswerByteTracing is the chat mode's time to the
// first answer byte with tracing off and on (every request sampled and
// exported to an in-process OTLP collector, the turn inspector on in both):
// the difference is what tracing adds before the first byte.
func BenchmarkTimeToFirstAnswerByteTracing(b *testing.B) {
	provider := providertest.New(b)
	provider.SetDefault(providertest.Script{Chunks: providertest.Answer("first byte then the rest of the answer", 8), NoRolePreamble: true})
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "tracing-off", true: "tracing-on"}[on], func(b *testing.B) {
			cfg := benchConfig(b, provider.BaseURL())
			if on {
				rcv := newOTLPReceiver(b)
				cfg.Telemetry.Traces.Enabled = true
				cfg.Telemetry.Traces.Endpoint = rcv.URL()
				cfg.Telemetry.Traces.Timeout = 5 * time.Second
			}
			srv, _ := benchApp(b, cfg, &http.Client{Transport: &http.Transport{}})
			client := &http.Client{Transport: &http.Transport{}}
			cpu0 := cpuTime()
			for b.Loop() {
				b.StopTimer()
				session := newSession(b, client, srv.URL, "chat")
				b.StartTimer()
				firstAnswerDelta(b, client, srv.URL, session, "How do I resume a stream after a dropped connection?")
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
