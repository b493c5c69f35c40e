package plugins

import (
	"context"
	"time"

	"github.com/cloudwego/eino/schema"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/chatmodel"
	"github.com/chatpipe/chatpipe/internal/inspect"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/internal/telemetry"
	"github.com/chatpipe/chatpipe/pipeline"
)

// What plugins tell the turn inspector and the tracer. Both are per stage
// and per call: nothing here runs per streamed token.

// modelCall is one model call being traced and recorded.
type modelCall struct {
	cm      *pipeline.ChatManage
	span    *telemetry.ModelCall
	rec     inspect.ModelCall
	started time.Time
}

// startModelCall starts the span of a call of m (purpose: generate,
// rewrite, rerank) and records its prompt for the inspector when it is
// the answer's.
func startModelCall(ctx context.Context, cm *pipeline.ChatManage, m *chatmodel.Model, purpose string,
	msgs []*schema.Message) (context.Context, *modelCall) {
	ctx, span := telemetry.StartModelCall(ctx, "chat", m.Provider, m.ModelID, m.Name)
	if span.Recording() {
		span.Span().SetAttributes(telemetry.ChatpipePlugin.String(purpose))
		span.Messages(telemetry.GenAIInputMessages, inspectMessages(msgs))
	}
	if purpose == "generate" {
		cm.Inspect.Prompt(inspectMessages(msgs))
	}
	now := time.Now()
	return ctx, &modelCall{cm: cm, span: span, started: now, rec: inspect.ModelCall{
		Purpose: purpose, Model: m.ModelID, Entry: m.Name, Provider: m.Provider, StartedAt: now.UTC(),
		TraceSpanID: spanID(span.Span()),
	}}
}

// end ends the call: its span and its inspector record.
func (c *modelCall) end(ttft time.Duration, in, out int, estimated bool, finish, answer string, err error) {
	if ttft > 0 {
		c.span.FirstToken(ttft)
	}
	if answer != "" {
		c.span.Messages(telemetry.GenAIOutputMessages, []inspect.Message{{Role: "assistant", Content: answer}})
	}
	c.span.End(in, out, estimated, finish, err)
	c.rec.DurationMS = time.Since(c.started).Milliseconds()
	c.rec.TTFTMS = ttft.Milliseconds()
	c.rec.InputTokens, c.rec.OutputTokens, c.rec.Estimated, c.rec.FinishReason = in, out, estimated, finish
	c.rec.Status = "completed"
	if err != nil {
		c.rec.Status, c.rec.Error = "failed", err.Error()
	}
	c.cm.Inspect.ModelCall(c.rec)
}

// generateTraced is m's Generate (a whole reply, not streamed) inside a
// model-call span, recorded for the inspector.
func generateTraced(ctx context.Context, cm *pipeline.ChatManage, m *chatmodel.Model, purpose string,
	msgs []*schema.Message) (*schema.Message, error) {
	ctx, call := startModelCall(ctx, cm, m, purpose, msgs)
	msg, err := m.Model.Generate(ctx, msgs, m.Options...)
	in, out, finish, answer := 0, 0, "", ""
	if msg != nil {
		answer = msg.Content
		if rm := msg.ResponseMeta; rm != nil {
			finish = rm.FinishReason
			if rm.Usage != nil {
				in, out = rm.Usage.PromptTokens, rm.Usage.CompletionTokens
			}
		}
	}
	call.end(0, in, out, false, finish, answer, err)
	return msg, err
}

func spanID(s trace.Span) string {
	if sc := s.SpanContext(); sc.HasSpanID() {
		return sc.SpanID().String()
	}
	return ""
}

// inspectMessages is a prompt as the inspector keeps it.
func inspectMessages(msgs []*schema.Message) []inspect.Message {
	out := make([]inspect.Message, len(msgs))
	for i, m := range msgs {
		out[i] = inspect.Message{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, inspect.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
	}
	return out
}

// inspectCandidates is retrieval's result as the inspector keeps it.
func inspectCandidates(hits []retrieval.SearchHit) []inspect.Candidate {
	out := make([]inspect.Candidate, len(hits))
	for i, h := range hits {
		out[i] = inspect.Candidate{ChunkID: h.ChunkID, DocumentID: h.DocumentID, Title: h.Title, Heading: h.Heading,
			Page: h.Page, Content: h.Content, KeywordScore: h.KeywordScore, VectorScore: h.VectorScore,
			FusedScore: h.Score, KeywordRank: h.KeywordRank, VectorRank: h.VectorRank}
	}
	return out
}

// inspectKept is what rerank kept, with the scores it gave.
func inspectKept(hits []retrieval.SearchHit) []inspect.Kept {
	out := make([]inspect.Kept, len(hits))
	for i, h := range hits {
		out[i] = inspect.Kept{ChunkID: h.ChunkID, Title: h.Title, Score: h.Score}
	}
	return out
}

// startToolSpan starts the span of a tool call (GenAI execute_tool).
func startToolSpan(ctx context.Context, name string, call schema.ToolCall) (context.Context, trace.Span) {
	ctx, span := telemetry.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(telemetry.GenAIOperationName.String("execute_tool"), telemetry.GenAIToolName.String(name),
			telemetry.GenAIToolCallID.String(call.ID))
		if telemetry.CaptureContent(ctx) {
			span.SetAttributes(telemetry.GenAIToolCallArguments.String(call.Function.Arguments))
		}
	}
	return ctx, span
}

// endToolSpan ends a tool call's span with its outcome.
func endToolSpan(ctx context.Context, span trace.Span, status, output string) {
	if span.IsRecording() {
		if telemetry.CaptureContent(ctx) {
			span.SetAttributes(telemetry.GenAIToolCallResult.String(output))
		}
		if status != eventbus.ToolCompleted {
			span.SetAttributes(attribute.String("error.type", "tool_"+status))
			span.SetStatus(codes.Error, "tool call "+status)
		}
	}
	span.End()
}
