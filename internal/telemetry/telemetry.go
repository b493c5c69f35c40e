// Package telemetry sets up OpenTelemetry tracing from config.yaml's
// telemetry.traces and the standard OTEL_* environment, and gives the rest
// of chatpipe small helpers to start spans.
//
// Spans find their tracer through the context: a span started by the HTTP
// middleware or the run carries the app's TracerProvider, and every span
// below it uses the same one. When tracing is off the context holds no
// recording span, the tracer is the no-op one, and a span costs a context
// allocation — spans are per stage and per call, never per token.
package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of chatpipe's spans.
const ScopeName = "github.com/chatpipe/chatpipe"

// Start starts a span named name as a child of ctx's span, with the
// tracer of that span's provider (the no-op tracer when ctx has none).
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(ScopeName).Start(ctx, name, opts...)
}

// Recording reports whether ctx's span records: callers skip building
// attributes nobody will read.
func Recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// TraceID is the trace id of ctx's span, "" when there is none.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// Fail marks span failed with err (its type in error.type, as the
// semantic conventions ask, and the message as the status description).
func Fail(span trace.Span, errType string, err error) {
	if err == nil || !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("error.type", errType))
	span.SetStatus(codes.Error, err.Error())
}

type captureKey struct{}

// WithCaptureContent marks ctx's work as one whose prompt and answer text
// may go into spans (telemetry.capture_content).
func WithCaptureContent(ctx context.Context, on bool) context.Context {
	if !on {
		return ctx
	}
	return context.WithValue(ctx, captureKey{}, true)
}

// CaptureContent reports whether prompt and answer text may go into
// ctx's spans; off unless telemetry.capture_content is true.
func CaptureContent(ctx context.Context) bool {
	on, _ := ctx.Value(captureKey{}).(bool)
	return on && Recording(ctx)
}

// Seconds is d as the fractional seconds the semantic conventions use.
func Seconds(d time.Duration) float64 { return d.Seconds() }
