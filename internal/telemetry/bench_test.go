package telemetry_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/chatpipe/chatpipe/internal/telemetry"
)

// BenchmarkSpansBeforeFirstByte starts and ends the spans a rag answer
// makes before its first answer byte — request, answer, six stages, the
// search, the model call — as the server does (attributes included), with
// tracing off (the no-op provider) and on (the SDK with its batch
// processor; the exporter discards). The difference is what tracing adds
// to the time to the first byte; exporting runs later, off the path.
func BenchmarkSpansBeforeFirstByte(b *testing.B) {
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer sdk.Shutdown(context.Background())
	for _, tc := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"tracing-off", noop.NewTracerProvider()}, {"tracing-on", sdk}} {
		b.Run(tc.name, func(b *testing.B) {
			tracer := tc.tp.Tracer(telemetry.ScopeName)
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				spansOfARagAnswer(tracer)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

func spansOfARagAnswer(tracer trace.Tracer) {
	ctx, req := tracer.Start(context.Background(), "POST /api/v1/sessions/:id/messages", trace.WithSpanKind(trace.SpanKindServer))
	if req.IsRecording() {
		req.SetAttributes(attribute.String("http.request.method", "POST"), attribute.String("http.route", "/api/v1/sessions/:id/messages"))
	}
	_, run := tracer.Start(ctx, "answer rag", trace.WithAttributes(telemetry.ChatpipeMode.String("rag")))
	runCtx := trace.ContextWithSpan(context.Background(), run)
	for _, stage := range []string{"load_history", "rewrite", "search", "rerank", "merge", "generate"} {
		sctx, span := telemetry.Start(runCtx, "stage "+stage)
		switch stage {
		case "search":
			_, s := telemetry.Start(sctx, "knowledge.search")
			if s.IsRecording() {
				s.SetAttributes(telemetry.ChatpipeSearchResults.Int(20), telemetry.ChatpipeSearchTopScore.Float64(0.9))
			}
			s.End()
		case "generate":
			_, call := telemetry.StartModelCall(sctx, "chat", "openai", "gpt-4o", "default")
			call.FirstToken(1)
			call.End(100, 20, false, "stop", nil)
		}
		if span.IsRecording() {
			span.SetAttributes(telemetry.ChatpipePlugin.String(stage), telemetry.ChatpipeStageStatus.String("finished"))
		}
		span.End()
	}
	run.End()
	req.End()
}

// cpuTime is the process's user+system CPU time (the machine is shared:
// wall time says little).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
