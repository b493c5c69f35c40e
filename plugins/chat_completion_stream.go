package plugins

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/chatmodel"
	"github.com/chatpipe/chatpipe/internal/citation"
	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/llm"
	"github.com/chatpipe/chatpipe/internal/think"
	"github.com/chatpipe/chatpipe/internal/tokens"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("chat_completion_stream", newChatCompletionStream) }

// ChatCompletionConfig is the `plugins.chat_completion_stream` section.
type ChatCompletionConfig struct {
	Model        string `mapstructure:"model"`         // a name under models:
	ThinkTags    bool   `mapstructure:"think_tags"`    // wrap thinking deltas in <think>…</think>
	SystemPrompt string `mapstructure:"system_prompt"` // sent first; empty = none
	// RAGPrompt is the last user message when merge produced a numbered
	// context (or found nothing and lets the model answer): {context} is
	// replaced by the passages as citation.FormatContext writes them and
	// {question} by ChatManage.SearchQuery(), the rewritten standalone
	// question, because that is what the passages were retrieved for (the
	// history before it still carries the user's own words).
	RAGPrompt string `mapstructure:"rag_prompt"`
}

// ChatCompletionStream asks the chat model and streams its output as
// events: reasoning from every dialect (reasoning_content, reasoning,
// Ollama thinking, inline <think> split at any byte) as thinking, the rest
// as the answer, tool-call deltas as tool_call events, then usage. Blocks
// are balanced on every ending; stopping cancels the provider call.
//
// After retrieval it asks with the numbered-context prompt and filters the
// answer so that every [n] it streams (and so saves) cites a reference
// that exists.
type ChatCompletionStream struct{ cfg ChatCompletionConfig }

func newChatCompletionStream(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := ChatCompletionConfig{Model: "default", ThinkTags: true, RAGPrompt: config.DefaultRAGPrompt}
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	if !strings.Contains(cfg.RAGPrompt, "{context}") || !strings.Contains(cfg.RAGPrompt, "{question}") {
		return nil, fmt.Errorf("%s.rag_prompt: must contain {context} and {question}", c.Key)
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
	name := cmp.Or(cm.Model, p.cfg.Model)
	m, err := cm.Models.ChatModel(name)
	if err != nil {
		return pipeline.Errorf(pipeline.CodeNotConfigured, err,
			"The chat model %q is not configured; check config.yaml.", name)
	}
	cm.AnswerModel = name
	if perr := p.Generate(ctx, cm, m, p.messages(cm)); perr != nil {
		return perr
	}
	return next()
}

// messages builds the prompt: system prompt, history, then the question —
// inside the rag prompt when retrieval ran.
func (p *ChatCompletionStream) messages(cm *pipeline.ChatManage) []*schema.Message {
	msgs := make([]*schema.Message, 0, len(cm.History)+2)
	if system := withSummary(p.cfg.SystemPrompt, cm.HistorySummary); system != "" {
		msgs = append(msgs, schema.SystemMessage(system))
	}
	for _, h := range cm.History {
		if h.Role == "assistant" {
			msgs = appendToolTurns(msgs, h.ToolCalls)
			msgs = append(msgs, schema.AssistantMessage(h.Content, nil))
		} else {
			msgs = append(msgs, schema.UserMessage(h.Content))
		}
	}
	if len(cm.References) > 0 || cm.NoContext {
		return append(msgs, schema.UserMessage(p.ragPrompt(cm)))
	}
	return append(msgs, schema.UserMessage(cm.Query))
}

// appendToolTurns renders an earlier answer's tool calls as the provider
// saw them: per model turn, an assistant message asking for the turn's
// calls, then one tool message per result.
func appendToolTurns(msgs []*schema.Message, calls []conversation.ToolCall) []*schema.Message {
	for i := 0; i < len(calls); {
		j := i + 1
		for j < len(calls) && calls[j].Turn == calls[i].Turn {
			j++
		}
		asked := make([]schema.ToolCall, 0, j-i)
		for _, c := range calls[i:j] {
			asked = append(asked, schema.ToolCall{ID: c.ID, Type: "function",
				Function: schema.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
		}
		msgs = append(msgs, schema.AssistantMessage("", asked))
		for _, c := range calls[i:j] {
			msgs = append(msgs, schema.ToolMessage(c.Output, c.ID))
		}
		i = j
	}
	return msgs
}

// ragPrompt renders rag_prompt with the numbered context of cm.References.
func (p *ChatCompletionStream) ragPrompt(cm *pipeline.ChatManage) string {
	passages := make([]citation.Passage, len(cm.References))
	for i, r := range cm.References {
		passages[i] = citation.Passage{Index: r.Index, Title: r.Title, Heading: r.Heading, Content: r.Content}
	}
	return strings.NewReplacer("{context}", citation.FormatContext(passages), "{question}", cm.SearchQuery()).
		Replace(p.cfg.RAGPrompt)
}

// Generate streams one model call into cm's emitter. Other plugins (the
// rag prompt, agents) call it with prompts of their own. When retrieval
// ran (cm.References, or cm.NoContext), answer text passes through a
// citation filter: a marker [n] with no reference n never reaches the
// client, and so is never saved.
func (p *ChatCompletionStream) Generate(ctx context.Context, cm *pipeline.ChatManage, m *chatmodel.Model,
	msgs []*schema.Message) *pipeline.PluginError {
	_, perr := p.GenerateTurn(ctx, cm, m, msgs, TurnOptions{})
	return perr
}

// TurnOptions adjust one model call of GenerateTurn.
type TurnOptions struct {
	// CallOptions are passed to the model (tools offered, tool choice).
	CallOptions []model.Option
	// ToolCallIDPrefix names the tool calls a provider sends without an
	// id: prefix + their position, from 1 ("" = "call_"). A caller making
	// several calls on one stream gives each its own prefix, so ids stay
	// unique on the stream.
	ToolCallIDPrefix string
	// OnToolCall, when set, is given each native tool call as soon as its
	// arguments are complete (its tool_call.end is emitted first), while
	// the model may still be streaming: the next call started, text
	// followed, the arguments closed a JSON object, or the stream ended.
	// index is the call's position in Turn.ToolCalls. It runs on the
	// caller's goroutine. An attempt that handed a call over is never
	// retried mid-stream: the call may have had effects.
	OnToolCall func(index int, call schema.ToolCall)
}

// Turn is what one streamed model call produced, besides its events.
type Turn struct {
	// Answer is the answer text as streamed (after the citation filter):
	// what the client received for this call (its committed attempt).
	Answer string
	// ToolCalls are the complete tool calls, in the order they started,
	// each with its id (the provider's, or one given by ToolCallIDPrefix).
	ToolCalls    []schema.ToolCall
	FinishReason string
}

// cutOffNote tells the model, and only the model, that its previous
// attempt at this reply broke off (mid-stream retry).
const cutOffNote = "[Note: your previous attempt at this reply was cut off by a connection problem " +
	"and discarded; the user saw none of it. Write the whole reply again from the start.]"

// GenerateTurn is Generate returning what the call produced: an agent
// loop calls it once per cycle and sends the answer and tool calls back
// to the model. A call that produced neither answer text nor a tool call
// fails with code empty_answer.
//
// Each attempt of the call is bracketed by model_call.started{attempt}
// and model_call.finished{status, attempt, committed}. When the provider
// stream breaks after partial output in a way a new attempt may fix (see
// llm.MidStream) and the model's stream_retry allows another attempt, the
// attempt is finished uncommitted — readers drop what it streamed — and
// the call is made again with cutOffNote added for the model. One usage
// event, the sum of every attempt, precedes the last model_call.finished.
func (p *ChatCompletionStream) GenerateTurn(ctx context.Context, cm *pipeline.ChatManage, m *chatmodel.Model,
	msgs []*schema.Message, opts TurnOptions) (*Turn, *pipeline.PluginError) {
	attempts := max(m.StreamAttempts, 1)
	if cm.NoStreamRetry {
		attempts = 1
	}
	start := time.Now()
	var spent eventbus.Usage // what withdrawn attempts cost
	// The loop's frame stays small, the events and logs being built in
	// helpers: the generation goroutine rests under it while the model
	// streams (see handler.streamTail on resting stacks).
	for attempt := 1; ; attempt++ {
		emitCallStarted(cm, attempt)
		g := p.attempt(ctx, cm, m, msgs, opts, start)
		if g.retry && attempt < attempts && ctx.Err() == nil {
			withdrawAttempt(cm, m, g, attempt, &spent)
			msgs = withCutOffNote(msgs)
			continue
		}
		return finishCall(cm, g, attempt, spent)
	}
}

// emitCallStarted is kept out of GenerateTurn's frame, event and all.
//
//go:noinline
func emitCallStarted(cm *pipeline.ChatManage, attempt int) {
	cm.Emitter.Emit(eventbus.Of(eventbus.TypeModelCallStarted, eventbus.ModelCall{Attempt: attempt}))
}

// withdrawAttempt ends an attempt that will be made again: its cost is
// added to spent, and it is finished uncommitted.
func withdrawAttempt(cm *pipeline.ChatManage, m *chatmodel.Model, g *generation, attempt int, spent *eventbus.Usage) {
	u := g.usageSoFar()
	spent.PromptTokens += u.PromptTokens
	spent.CompletionTokens += u.CompletionTokens
	spent.ReasoningTokens += u.ReasoningTokens
	spent.Estimated = spent.Estimated || u.Estimated
	call := eventbus.ModelCall{Attempt: attempt}
	cm.Emitter.Emit(eventbus.Of(eventbus.TypeModelCallFinished, call.Finished(g.status, false)))
	cm.Log().Warn("the provider stream broke off; trying the call again",
		zap.String("model", m.Name), zap.Int("attempt", attempt), zap.String("status", g.status), zap.Error(g.err))
}

// finishCall ends the committed attempt: the usage of every attempt, then
// model_call.finished; it returns what the call produced.
func finishCall(cm *pipeline.ChatManage, g *generation, attempt int, spent eventbus.Usage) (*Turn, *pipeline.PluginError) {
	if g.reportUsage {
		u := g.usageSoFar()
		u.PromptTokens += spent.PromptTokens
		u.CompletionTokens += spent.CompletionTokens
		u.ReasoningTokens += spent.ReasoningTokens
		u.Estimated = u.Estimated || spent.Estimated
		g.blocks.Emitter.Emit(eventbus.Of(eventbus.TypeUsage, u))
	}
	call := eventbus.ModelCall{Attempt: attempt}
	cm.Emitter.Emit(eventbus.Of(eventbus.TypeModelCallFinished, call.Finished(g.status, true)))
	return g.turn(), g.perr
}

// withCutOffNote returns msgs with cutOffNote for the model: added to a
// copy of the last message when it is the user's (two user messages in a
// row trouble some chat templates), else as a user message of its own.
func withCutOffNote(msgs []*schema.Message) []*schema.Message {
	out := slices.Clone(msgs)
	if n := len(out); n > 0 && out[n-1].Role == schema.User && !strings.Contains(out[n-1].Content, cutOffNote) {
		last := *out[n-1]
		last.Content += "\n\n" + cutOffNote
		out[n-1] = &last
		return out
	}
	if n := len(out); n > 0 && strings.Contains(out[n-1].Content, cutOffNote) {
		return out // noted already
	}
	return append(out, schema.UserMessage(cutOffNote))
}

// attempt makes one attempt of a model call and streams it into cm's
// emitter; the returned generation says how it ended.
func (p *ChatCompletionStream) attempt(ctx context.Context, cm *pipeline.ChatManage, m *chatmodel.Model,
	msgs []*schema.Message, opts TurnOptions, start time.Time) *generation {
	// The call gets a context of its own so the provider request and its
	// reader goroutine end whenever this function returns.
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	callCtx, call := startModelCall(callCtx, cm, m, "generate", msgs)

	out := &generation{start: start, idPrefix: opts.ToolCallIDPrefix, prompt: msgs, onToolCall: opts.OnToolCall,
		status: eventbus.ModelCallCompleted}
	out.blocks = think.Blocks{Emitter: answerText{cm.Emitter, &out.answer}, Tags: p.cfg.ThinkTags}
	out.sink = &out.blocks
	if len(cm.References) > 0 || cm.NoContext {
		out.cite = citation.NewFilter(len(cm.References), out.blocks.Answer)
		out.sink = citedBlocks{out}
	}
	defer out.blocks.Close() // on every ending, panics included
	var callErr error
	defer func() { // the span and the inspector's record, once per call
		u := out.usageSoFar()
		call.end(out.ttft, u.PromptTokens, u.CompletionTokens, u.Estimated, out.finish, out.answer.String(), callErr)
	}()

	first, sr, _, err := llm.StreamWithRetry(callCtx, m, msgs, opts.CallOptions...)
	if err != nil {
		callErr = err
		out.status, _ = llm.MidStream(err)
		out.fail(ctx, err, m.Name)
		return out
	}
	defer sr.Close()
	for msg := first; msg != nil; {
		out.handle(msg)
		msg, err = sr.Recv()
		if err != nil {
			break
		}
	}
	out.splitter.Flush(out.sink)
	out.flushCitations()
	if err != nil && !errors.Is(err, io.EOF) {
		callErr = err
		out.endToolCalls(false)
		out.status, out.retry = llm.MidStream(err)
		out.retry = out.retry && !out.handedOver
		out.fail(ctx, err, m.Name)
		return out
	}
	out.endToolCalls(true)
	out.blocks.Close()
	out.reportUsage = true
	if !out.blocks.AnswerStarted() && len(out.tools) == 0 {
		out.perr = &pipeline.PluginError{Code: "empty_answer", Message: emptyAnswerMessage(out.finish), Retryable: true}
	}
	return out
}

// answerText passes events on and keeps the answer text.
type answerText struct {
	eventbus.Emitter
	answer *strings.Builder
}

func (r answerText) Emit(ev eventbus.Event) {
	if ev.Type == eventbus.TypeAnswerDelta {
		r.answer.WriteString(ev.Text)
	}
	r.Emitter.Emit(ev)
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
	sink     think.Sink       // where content goes: blocks, or blocks behind the citation filter
	cite     *citation.Filter // nil when the answer cites nothing
	splitter think.Splitter
	start    time.Time
	ttft     time.Duration
	usage    *schema.TokenUsage
	finish   string
	tools    []*toolCall
	byIndex  map[int]*toolCall // calls by the provider's index
	idPrefix string
	answer   strings.Builder
	prompt   []*schema.Message // what was sent, for an estimate of its tokens
	streamed tokens.Counter    // what the provider streamed, likewise

	onToolCall func(int, schema.ToolCall) // TurnOptions.OnToolCall
	handedOver bool                       // a call went to onToolCall

	// How the attempt ended.
	status      string // eventbus.ModelCall* status
	retry       bool   // a new attempt may succeed (the stream broke after output)
	reportUsage bool   // the attempt's usage is reported
	perr        *pipeline.PluginError
	err         error // the provider error, for the log
}

type toolCall struct {
	id, name string
	args     strings.Builder
	ended    bool // tool_call.end was emitted
}

// turn is the call's result so far.
func (g *generation) turn() *Turn {
	t := &Turn{Answer: g.answer.String(), FinishReason: g.finish}
	for _, tc := range g.tools {
		t.ToolCalls = append(t.ToolCalls, tc.call())
	}
	return t
}

func (tc *toolCall) call() schema.ToolCall {
	return schema.ToolCall{ID: tc.id, Type: "function",
		Function: schema.FunctionCall{Name: tc.name, Arguments: tc.args.String()}}
}

func (g *generation) handle(msg *schema.Message) {
	g.streamed.Add(msg.ReasoningContent)
	g.streamed.Add(msg.Content)
	if msg.ReasoningContent != "" {
		g.blocks.Thinking(msg.ReasoningContent)
	}
	if msg.Content != "" || msg.ReasoningContent != "" {
		g.endToolCalls(true) // text after a tool call: the call is complete
	}
	if msg.Content != "" {
		g.splitter.Write(msg.Content, g.sink)
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
// whole calls without an index (Ollama) get one call per chunk, and a new
// id at a known index (servers that number every call 0) starts a new
// call.
func (g *generation) toolCallDelta(tc schema.ToolCall) {
	var cur *toolCall
	if tc.Index != nil {
		cur = g.byIndex[*tc.Index]
	}
	if cur != nil && tc.ID != "" && tc.ID != cur.id {
		cur = nil
	}
	if cur == nil {
		g.endToolCalls(true) // a new call: the ones before are complete
		g.flushCitations()
		g.blocks.Close() // text before a tool call ends its block
		id := tc.ID
		if id == "" {
			id = cmp.Or(g.idPrefix, "call_") + strconv.Itoa(len(g.tools)+1)
		}
		cur = &toolCall{id: id, name: tc.Function.Name}
		g.tools = append(g.tools, cur)
		if tc.Index != nil {
			if g.byIndex == nil {
				g.byIndex = map[int]*toolCall{}
			}
			g.byIndex[*tc.Index] = cur
		}
		g.blocks.Emitter.Emit(eventbus.Of(eventbus.TypeToolCallStart, eventbus.ToolCall{ToolCallID: cur.id, Name: cur.name}))
	}
	if tc.Function.Arguments != "" {
		g.streamed.Add(tc.Function.Arguments)
		cur.args.WriteString(tc.Function.Arguments)
		g.blocks.Emitter.Emit(eventbus.Of(eventbus.TypeToolCallDelta,
			eventbus.ToolCall{ToolCallID: cur.id, Arguments: tc.Function.Arguments}))
		if g.onToolCall != nil && strings.HasSuffix(strings.TrimSpace(tc.Function.Arguments), "}") &&
			json.Valid([]byte(cur.args.String())) {
			g.endToolCalls(true) // the arguments closed their object: the call is complete
		}
	}
}

// citedBlocks is the sink of an answer that cites references: thinking
// goes straight to the blocks, answer text through the citation filter.
type citedBlocks struct{ g *generation }

func (c citedBlocks) Thinking(text string) { c.g.blocks.Thinking(text) }
func (c citedBlocks) Answer(text string)   { c.g.cite.Write(text) }

// flushCitations releases answer text the citation filter holds back
// (an unfinished "[1"), before its block is closed.
func (g *generation) flushCitations() {
	if g.cite != nil {
		g.cite.Flush()
	}
}

// endToolCalls ends the calls not ended yet with tool_call.end and, when
// complete is set, hands each to onToolCall.
func (g *generation) endToolCalls(complete bool) {
	for i, tc := range g.tools {
		if tc.ended {
			continue
		}
		tc.ended = true
		g.blocks.Emitter.Emit(eventbus.Of(eventbus.TypeToolCallEnd,
			eventbus.ToolCall{ToolCallID: tc.id, Name: tc.name, Arguments: tc.args.String()}))
		if complete && g.onToolCall != nil {
			g.handedOver = true
			g.onToolCall(i, tc.call())
		}
	}
}

// usageSoFar is the attempt's usage: the provider's when it sent it, otherwise
// (a stopped or failed call ends before the usage chunk, and some servers
// never send one) an estimate counted from the prompt and the streamed
// text, marked estimated — never zeros for tokens that were paid for.
func (g *generation) usageSoFar() eventbus.Usage {
	u := eventbus.Usage{TotalMS: time.Since(g.start).Milliseconds(), TTFTMS: g.ttft.Milliseconds()}
	if g.usage != nil {
		u.PromptTokens = g.usage.PromptTokens
		u.CompletionTokens = g.usage.CompletionTokens
		u.ReasoningTokens = g.usage.CompletionTokensDetails.ReasoningTokens
	} else {
		u.PromptTokens, u.CompletionTokens, u.Estimated = estimatePrompt(g.prompt), g.streamed.Tokens(), true
	}
	return u
}

// perMessageTokens is what chat formats add around each message (role
// markers, separators) in common tokenizers.
const perMessageTokens = 4

// estimatePrompt estimates the tokens of a prompt.
func estimatePrompt(msgs []*schema.Message) int {
	var c tokens.Counter
	for _, m := range msgs {
		c.Add(m.Content)
		for _, tc := range m.ToolCalls {
			c.Add(tc.Function.Name)
			c.Add(tc.Function.Arguments)
		}
	}
	return c.Tokens() + perMessageTokens*len(msgs)
}

// fail turns a provider or cancellation error into the attempt's result,
// after closing the blocks; the usage is reported when the call was
// stopped or had streamed.
func (g *generation) fail(ctx context.Context, err error, model string) {
	g.blocks.Close()
	g.err = err
	if g.status == eventbus.ModelCallCompleted {
		g.status = eventbus.ModelCallFailed
	}
	if perr := pipeline.Canceled(ctx); perr != nil {
		g.reportUsage, g.retry, g.perr = true, false, perr
		return
	}
	g.reportUsage = g.blocks.Started()
	code, msg, retryable := llm.Describe(err, model)
	g.perr = &pipeline.PluginError{Code: code, Message: msg, Retryable: retryable, Err: err}
}
