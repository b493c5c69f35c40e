package telemetry

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of the OpenTelemetry GenAI semantic conventions (written
// out: the semconv package of this otel version has no gen_ai group).
const (
	GenAIOperationName       = attribute.Key("gen_ai.operation.name")
	GenAIProviderName        = attribute.Key("gen_ai.provider.name")
	GenAIRequestModel        = attribute.Key("gen_ai.request.model")
	GenAIUsageInputTokens    = attribute.Key("gen_ai.usage.input_tokens")
	GenAIUsageOutputTokens   = attribute.Key("gen_ai.usage.output_tokens")
	GenAIResponseFinish      = attribute.Key("gen_ai.response.finish_reasons")
	GenAITimeToFirstToken    = attribute.Key("gen_ai.server.time_to_first_token")
	GenAIInputMessages       = attribute.Key("gen_ai.input.messages")
	GenAIOutputMessages      = attribute.Key("gen_ai.output.messages")
	GenAIToolName            = attribute.Key("gen_ai.tool.name")
	GenAIToolCallID          = attribute.Key("gen_ai.tool.call.id")
	GenAIToolCallArguments   = attribute.Key("gen_ai.tool.call.arguments")
	GenAIToolCallResult      = attribute.Key("gen_ai.tool.call.result")
	GenAIEmbeddingsInputs    = attribute.Key("chatpipe.embeddings.inputs")
	ChatpipeUsageEstimated   = attribute.Key("chatpipe.usage.estimated")
	ChatpipeAttempts         = attribute.Key("chatpipe.model.attempts")
	ChatpipeModelEntry       = attribute.Key("chatpipe.model.entry")
	ChatpipeSearchMethod     = attribute.Key("chatpipe.search.method")
	ChatpipeSearchResults    = attribute.Key("chatpipe.search.result_count")
	ChatpipeSearchTopScore   = attribute.Key("chatpipe.search.top_score")
	ChatpipeSearchDegraded   = attribute.Key("chatpipe.search.degraded")
	ChatpipeMode             = attribute.Key("chatpipe.mode")
	ChatpipePlugin           = attribute.Key("chatpipe.plugin")
	ChatpipeStage            = attribute.Key("chatpipe.stage")
	ChatpipeStageStatus      = attribute.Key("chatpipe.stage.status")
	ChatpipeStageDetail      = attribute.Key("chatpipe.stage.detail")
	ChatpipeSessionID        = attribute.Key("chatpipe.session.id")
	ChatpipeMessageID        = attribute.Key("chatpipe.message.id")
	ChatpipeStreamStatus     = attribute.Key("chatpipe.stream.status")
	ChatpipeRerankKept       = attribute.Key("chatpipe.rerank.kept")
	ChatpipeRerankCandidates = attribute.Key("chatpipe.rerank.candidates")
)

// ModelCall is the span of one model call, with GenAI attributes.
type ModelCall struct {
	ctx   context.Context
	span  trace.Span
	start time.Time
}

// StartModelCall starts the span of a model call: operation is "chat"
// (or "embeddings"), provider the provider's name (openai, ollama, demo),
// model the model id the provider is asked for, entry the models: entry.
func StartModelCall(ctx context.Context, operation, provider, model, entry string) (context.Context, *ModelCall) {
	ctx, span := Start(ctx, operation+" "+model, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(GenAIOperationName.String(operation), GenAIProviderName.String(provider),
			GenAIRequestModel.String(model), ChatpipeModelEntry.String(entry))
	}
	return ctx, &ModelCall{ctx: ctx, span: span, start: time.Now()}
}

// Recording reports whether the call's span records.
func (c *ModelCall) Recording() bool { return c.span.IsRecording() }

// Span is the call's span (to add attributes).
func (c *ModelCall) Span() trace.Span { return c.span }

// FirstToken records the time to the first token, once per call.
func (c *ModelCall) FirstToken(ttft time.Duration) {
	if c.span.IsRecording() {
		c.span.SetAttributes(GenAITimeToFirstToken.Float64(ttft.Seconds()))
		c.span.AddEvent("gen_ai.first_token")
	}
}

// Messages adds content as key (JSON) when telemetry.capture_content is on.
func (c *ModelCall) Messages(key attribute.Key, content any) {
	if !CaptureContent(c.ctx) {
		return
	}
	b, err := json.Marshal(content)
	if err == nil {
		c.span.SetAttributes(key.String(string(b)))
	}
}

// End ends the span with the call's usage, finish reason and error.
func (c *ModelCall) End(inputTokens, outputTokens int, estimated bool, finish string, err error) {
	if c.span.IsRecording() {
		c.span.SetAttributes(GenAIUsageInputTokens.Int(inputTokens), GenAIUsageOutputTokens.Int(outputTokens))
		if estimated {
			c.span.SetAttributes(ChatpipeUsageEstimated.Bool(true))
		}
		if finish != "" {
			c.span.SetAttributes(GenAIResponseFinish.StringSlice([]string{finish}))
		}
		Fail(c.span, "model_error", err)
	}
	c.span.End()
}
