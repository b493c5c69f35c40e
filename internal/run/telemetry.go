package run

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/inspect"
	"github.com/chatpipe/chatpipe/internal/telemetry"
)

// InspectorSetup configures the turn inspector for new runs.
type InspectorSetup struct {
	Enabled bool
	// MaxBytes bounds one saved record (0 = no bound); a bigger one has
	// its long texts cut, and says so.
	MaxBytes int
	// DisabledModes are chat modes whose answers are not recorded.
	DisabledModes []string
}

// on reports whether answers of mode are recorded.
func (s InspectorSetup) on(mode string) bool {
	return s.Enabled && !slices.Contains(s.DisabledModes, mode)
}

// startSpan starts the span of a generation, a child of the request's
// span in ctx (or of its traceparent). The generation runs on a context
// of its own after the request returns; its spans stay in this trace.
func (m *Manager) startSpan(ctx context.Context, info Info) trace.Span {
	tracer := m.opts.Tracer
	if tracer == nil {
		tracer = noop.NewTracerProvider().Tracer(telemetry.ScopeName)
	}
	_, span := tracer.Start(ctx, "answer "+info.Mode, trace.WithAttributes(
		telemetry.ChatpipeMode.String(info.Mode), telemetry.ChatpipeMessageID.String(info.StreamID)))
	if info.SessionID != "" && span.IsRecording() {
		span.SetAttributes(telemetry.ChatpipeSessionID.String(info.SessionID))
	}
	return span
}

// traceID is span's trace id, "" when it has none.
func traceID(span trace.Span) string {
	if sc := span.SpanContext(); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// withTrace adds the trace id to a run's logger, so every line of the
// stream can be found from the trace and back.
func withTrace(log *zap.Logger, span trace.Span) *zap.Logger {
	if id := traceID(span); id != "" {
		return log.With(zap.String("trace_id", id))
	}
	return log
}

// endSpan ends the generation's span with its terminal status.
func endSpan(span trace.Span, status string) {
	if span == nil {
		return
	}
	if span.IsRecording() && status != "" {
		span.SetAttributes(telemetry.ChatpipeStreamStatus.String(status))
		if status == eventbus.StatusFailed {
			span.SetStatus(codes.Error, "answer failed")
		}
	}
	span.End()
}

// inspectedTypes are the events the turn inspector folds (no deltas).
var inspectedTypes = []eventbus.Type{
	eventbus.TypeStage, eventbus.TypeQueryRewritten, eventbus.TypeReferences,
	eventbus.TypeToolCallEnd, eventbus.TypeToolResult,
}

// inspectorHandler folds a stream's events into rec: stages, the
// rewritten question, the numbered context, tool calls and results.
func inspectorHandler(rec *inspect.Recorder) func(*eventbus.Event) {
	return func(ev *eventbus.Event) {
		switch p := ev.Payload.(type) {
		case eventbus.Stage:
			if p.Status != eventbus.StageStarted {
				rec.Stage(p)
			}
		case eventbus.QueryRewritten:
			rec.Rewritten(p.Original, p.Rewritten)
		case eventbus.References:
			rec.Context(p.Items)
		case eventbus.ToolCall:
			if ev.Type == eventbus.TypeToolCallEnd {
				rec.ToolCallEnded(p.ToolCallID, p.Name, p.Arguments)
			}
		case eventbus.ToolResult:
			rec.ToolResult(p.ToolCallID, p.Output, p.Status)
		}
	}
}

// partInspectorHandler is inspectorHandler for one model answering side
// by side: the models share one bus, so it folds only the events its
// guard placed with model.
func partInspectorHandler(rec *inspect.Recorder, model string) func(*eventbus.Event) {
	fold := inspectorHandler(rec)
	return func(ev *eventbus.Event) {
		if ev.Placement != nil && ev.Placement.Model == model {
			fold(ev)
		}
	}
}

// saveInspection saves the run's turn inspector record with its message;
// a failure is logged (the answer itself is saved already).
func (m *Manager) saveInspection(ctx context.Context, r *Run, status string, log *zap.Logger) {
	m.saveRecord(ctx, r.inspect, r.StreamID, r.inspectMax, status, log)
}

// saveRecord saves rec (when the inspector recorded this answer) as the
// record of message id, bounded to maxBytes.
func (m *Manager) saveRecord(ctx context.Context, rec *inspect.Recorder, id string, maxBytes int, status string, log *zap.Logger) {
	if rec == nil || m.opts.Traces == nil {
		return
	}
	data, err := inspect.Encode(rec.Snapshot(status), maxBytes)
	if err == nil {
		err = m.opts.Traces.SaveTrace(ctx, id, data)
	}
	if err != nil {
		log.Warn("saving the turn inspector's record failed", zap.Error(err))
	}
}
