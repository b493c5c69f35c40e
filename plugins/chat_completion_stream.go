package plugins

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/llm"
	"github.com/chatpipe/chatpipe/internal/think"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("chat_completion_stream", newChatCompletionStream) }

// ChatCompletionConfig is the `plugins.chat_completion_stream` section.
type ChatCompletionConfig struct {
	Model        string `mapstructure:"model"`         // a name under models:
	ThinkTags    bool   `mapstructure:"think_tags"`    // wrap thinking deltas in <think>…</think>
	SystemPrompt string `mapstructure:"system_prompt"` // sent first; empty = none
}

// ChatCompletionStream asks the chat model and streams its output as
// events: reasoning from every dialect (reasoning_content, reasoning,
// Ollama thinking, inline <think> split at any byte) as thinking, the rest
// as the answer, tool-call deltas as tool_call events, then usage. Blocks
// are balanced on every ending; stopping cancels the provider call.
type ChatCompletionStream struct{ cfg ChatCompletionConfig }

func newChatCompletionStream(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := ChatCompletionConfig{Model: "default", ThinkTags: true}
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	return &ChatCompletionStream{cfg: cfg}, nil
}

// Name implements pipeline.Plugin.
func (p *ChatCompletionStream) Name() string { return "chat_completion_stream" }

// Events implements pipeline.Plugin.
func (p *ChatCompletionStream) Events() []pipeline.EventType {
	return []pipeline.EventType{pipeline.StageGenerate}
}

// ModelName is the model entry the plugin asks.
func (p *ChatCompletionStream) ModelName() string { return p.cfg.Model }

// OnEvent implements pipeline.Plugin.
func (p *ChatCompletionStream) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	m, err := cm.Models.ChatModel(p.cfg.Model)
	if err != nil {
		return pipeline.Errorf(pipeline.CodeNotConfigured, err,
			"The chat model %q is not configured; check config.yaml.", p.cfg.Model)
	}
	if perr := p.Generate(ctx, cm, m, p.messages(cm)); perr != nil {
		return perr
	}
	return next()
}

// messages builds the prompt: system prompt, history, question.
func (p *ChatCompletionStream) messages(cm *pipeline.ChatManage) []*schema.Message {
	msgs := make([]*schema.Message, 0, len(cm.History)+2)
	if p.cfg.SystemPrompt != "" {
		msgs = append(msgs, schema.SystemMessage(p.cfg.SystemPrompt))
	}
	for _, h := range cm.History {
		if h.Role == "assistant" {
			msgs = append(msgs, schema.AssistantMessage(h.Content, nil))
		} else {
			msgs = append(msgs, schema.UserMessage(h.Content))
		}
	}
	return append(msgs, schema.UserMessage(cm.Query))
}

// Generate streams one model call into cm's emitter. Other plugins (the
// rag prompt, agents) call it with prompts of their own.
func (p *ChatCompletionStream) Generate(ctx context.Context, cm *pipeline.ChatManage, m *pipeline.ChatModel,
	msgs []*schema.Message) *pipeline.PluginError {
	// The call gets a context of its own so the provider request and its
	// reader goroutine end whenever this function returns.
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	start := time.Now()
	out := &generation{blocks: think.Blocks{Emitter: cm.Emitter, Tags: p.cfg.ThinkTags}, start: start}
	defer out.blocks.Close() // on every ending, panics included

	first, sr, _, err := llm.StreamWithRetry(callCtx, m, msgs)
	if err != nil {
		return out.fail(ctx, err, m.Name)
	}
	defer sr.Close()
	for msg := first; msg != nil; {
		out.handle(msg)
		msg, err = sr.Recv()
		if err != nil {
			break
		}
	}
	out.splitter.Flush(&out.blocks)
	out.endToolCalls()
	if err != nil && !errors.Is(err, io.EOF) {
		return out.fail(ctx, err, m.Name)
	}
	out.blocks.Close()
	out.emitUsage()
	if !out.blocks.AnswerStarted() && len(out.tools) == 0 {
		return &pipeline.PluginError{Code: "empty_answer", Message: emptyAnswerMessage(out.finish), Retryable: true}
	}
	return nil
}

func emptyAnswerMessage(finish string) string {
	if finish == "length" {
		return "The model reached its token limit before it started answering."
	}
	return "The model returned an empty answer."
}

// generation is the state of one streamed model call.
type generation struct {
	blocks   think.Blocks
	splitter think.Splitter
	start    time.Time
	ttft     time.Duration
	usage    *schema.TokenUsage
	finish   string
	tools    []*toolCall
}

type toolCall struct {
	id, name string
	args     strings.Builder
}

func (g *generation) handle(msg *schema.Message) {
	if msg.ReasoningContent != "" {
		g.blocks.Thinking(msg.ReasoningContent)
	}
	if msg.Content != "" {
		g.splitter.Write(msg.Content, &g.blocks)
	}
	if g.ttft == 0 && g.blocks.Started() {
		g.ttft = time.Since(g.start)
	}
	for _, tc := range msg.ToolCalls {
		g.toolCallDelta(tc)
	}
	if rm := msg.ResponseMeta; rm != nil {
		if rm.Usage != nil {
			g.usage = rm.Usage
		}
		if rm.FinishReason != "" {
			g.finish = rm.FinishReason
		}
	}
}

// toolCallDelta emits tool_call.start the first time a call index is seen
// and tool_call.delta for each arguments fragment. Providers that send
// whole calls without an index (Ollama) get one call per chunk.
func (g *generation) toolCallDelta(tc schema.ToolCall) {
	var cur *toolCall
	if tc.Index != nil && *tc.Index < len(g.tools) && g.tools[*tc.Index] != nil {
		cur = g.tools[*tc.Index]
	} else {
		g.blocks.Close() // text before a tool call ends its block
		id := tc.ID
		if id == "" {
			id = "call_" + strconv.Itoa(len(g.tools)+1)
		}
		cur = &toolCall{id: id, name: tc.Function.Name}
		g.tools = append(g.tools, cur)
		g.blocks.Emitter.Emit(eventbus.Of(eventbus.TypeToolCallStart, eventbus.ToolCall{ToolCallID: cur.id, Name: cur.name}))
	}
	if tc.Function.Arguments != "" {
		cur.args.WriteString(tc.Function.Arguments)
		g.blocks.Emitter.Emit(eventbus.Of(eventbus.TypeToolCallDelta,
			eventbus.ToolCall{ToolCallID: cur.id, Arguments: tc.Function.Arguments}))
	}
}

func (g *generation) endToolCalls() {
	for _, tc := range g.tools {
		g.blocks.Emitter.Emit(eventbus.Of(eventbus.TypeToolCallEnd,
			eventbus.ToolCall{ToolCallID: tc.id, Name: tc.name, Arguments: tc.args.String()}))
	}
}

func (g *generation) emitUsage() {
	u := eventbus.Usage{TotalMS: time.Since(g.start).Milliseconds(), TTFTMS: g.ttft.Milliseconds()}
	if g.usage != nil {
		u.PromptTokens = g.usage.PromptTokens
		u.CompletionTokens = g.usage.CompletionTokens
		u.ReasoningTokens = g.usage.CompletionTokensDetails.ReasoningTokens
	}
	g.blocks.Emitter.Emit(eventbus.Of(eventbus.TypeUsage, u))
}

// fail turns a provider or cancellation error into the plugin's result,
// after closing the blocks and reporting what usage is known.
func (g *generation) fail(ctx context.Context, err error, model string) *pipeline.PluginError {
	g.blocks.Close()
	if perr := pipeline.Canceled(ctx); perr != nil {
		g.emitUsage()
		return perr
	}
	if g.blocks.Started() {
		g.emitUsage()
	}
	code, msg, retryable := llm.Describe(err, model)
	return &pipeline.PluginError{Code: code, Message: msg, Retryable: retryable, Err: err}
}
