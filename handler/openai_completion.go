package handler

import (
	"cmp"
	"net/http"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/message"
)

// What a chat completion is made of, and how a run's events become one.

// OpenAIExtension is the chatpipe-specific object on the last streamed
// chunk (the one with finish_reason) and on a whole chat.completion, under
// the key "chatpipe". OpenAI clients ignore it.
type OpenAIExtension struct {
	StreamID   string               `json:"stream_id"`
	Status     string               `json:"status"` // completed or stopped
	References []eventbus.Reference `json:"references"`
}

// OpenAIUsage is OpenAI's usage object.
type OpenAIUsage struct {
	PromptTokens            int `json:"prompt_tokens"`
	CompletionTokens        int `json:"completion_tokens"`
	TotalTokens             int `json:"total_tokens"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type openAIDelta struct {
	Role             string  `json:"role,omitempty"`
	Content          *string `json:"content,omitempty"`
	ReasoningContent *string `json:"reasoning_content,omitempty"`
}

type openAIChunkChoice struct {
	Index        int         `json:"index"`
	Delta        openAIDelta `json:"delta"`
	FinishReason *string     `json:"finish_reason"`
}

type openAIChunk struct {
	ID       string              `json:"id"`
	Object   string              `json:"object"`
	Created  int64               `json:"created"`
	Model    string              `json:"model"`
	Choices  []openAIChunkChoice `json:"choices"`
	Usage    *OpenAIUsage        `json:"usage,omitempty"`
	Chatpipe *OpenAIExtension    `json:"chatpipe,omitempty"`
}

type openAIMessageOut struct {
	Role             string  `json:"role"`
	Content          string  `json:"content"`
	ReasoningContent *string `json:"reasoning_content,omitempty"`
	Refusal          *string `json:"refusal"`
}

type openAIChoice struct {
	Index        int              `json:"index"`
	Message      openAIMessageOut `json:"message"`
	FinishReason string           `json:"finish_reason"`
	Logprobs     *struct{}        `json:"logprobs"`
}

type openAICompletion struct {
	ID       string           `json:"id"`
	Object   string           `json:"object"`
	Created  int64            `json:"created"`
	Model    string           `json:"model"`
	Choices  []openAIChoice   `json:"choices"`
	Usage    OpenAIUsage      `json:"usage"`
	Chatpipe *OpenAIExtension `json:"chatpipe"`
}

// piece is text to send: content, or reasoning.
type piece struct {
	text      string
	reasoning bool
}

// completionBuilder turns a run's events into a chat completion, through
// the one event → message fold. Thinking is sent as reasoning_content, or
// — with tags — as <think>…</think> in content; either way chatpipe's own
// think tags (think_tags in the mode's config) are taken off first, so the
// output does not depend on them.
type completionBuilder struct {
	id, model, streamID string
	created             int64
	tags                bool

	// fold keeps the message. Only a whole completion (stream: false)
	// sees a model call attempt withdrawn: a streaming one asks its run not
	// to retry mid-stream, since it cannot take back what it sent.
	fold    message.Fold
	pending []piece // sent by the next emit
}

func newCompletionBuilder(streamID, model string, tags bool) *completionBuilder {
	return &completionBuilder{id: "chatcmpl-" + streamID, model: model, streamID: streamID,
		created: time.Now().Unix(), tags: tags, fold: message.Fold{InlineThinking: tags}}
}

func (b *completionBuilder) apply(ev eventbus.Event) {
	a := b.fold.Add(&ev)
	b.add(piece{text: a.Text, reasoning: a.Thinking})
}

// content and reasoning are the whole completion's message text.
func (b *completionBuilder) content() string {
	if b.tags {
		return b.fold.Inline()
	}
	return b.fold.Content()
}

func (b *completionBuilder) reasoning() string {
	if b.tags {
		return ""
	}
	return b.fold.Thinking()
}

// add queues text, merged with the previous piece of the same kind.
func (b *completionBuilder) add(p piece) {
	if p.text == "" {
		return
	}
	if n := len(b.pending); n > 0 && b.pending[n-1].reasoning == p.reasoning {
		b.pending[n-1].text += p.text
		return
	}
	b.pending = append(b.pending, p)
}

// finishReason is OpenAI's finish_reason for how the run ended, "" when it
// failed (the caller sends the error instead).
func (b *completionBuilder) finishReason() string {
	status, reason := b.fold.Status(), b.fold.Reason()
	switch {
	case status == eventbus.StatusCompleted, status == eventbus.StatusStopped:
		return "stop"
	case status == eventbus.StatusFailed && (reason == "content_filtered" || reason == "content_filter"):
		return "content_filter" // sensitive_filter (or another plugin) ended the answer
	}
	return ""
}

// failure is the OpenAI error and HTTP status of a failed run.
func (b *completionBuilder) failure() (int, openAIErrorBody) {
	code, msg, status := b.fold.Reason(), "The answer could not be completed.", http.StatusInternalServerError
	if e := b.fold.Error(); e != nil {
		code = cmp.Or(e.Code, code)
		msg = cmp.Or(e.Message, msg)
	}
	switch code {
	case "rate_limited":
		status = http.StatusTooManyRequests
	case "provider_error":
		status = http.StatusBadGateway
	case "timeout":
		status = http.StatusGatewayTimeout
	case "bad_request":
		status = http.StatusBadRequest
	}
	typ := "server_error"
	switch status {
	case http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case http.StatusBadRequest:
		typ = "invalid_request_error"
	}
	return status, newOpenAIError(typ, cmp.Or(code, "internal_error"), "", msg)
}

func (b *completionBuilder) openAIUsage() OpenAIUsage {
	var u OpenAIUsage
	if usage := b.fold.Usage(); usage != nil {
		u.PromptTokens, u.CompletionTokens = usage.PromptTokens, usage.CompletionTokens
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		u.CompletionTokensDetails.ReasoningTokens = usage.ReasoningTokens
	}
	return u
}

func (b *completionBuilder) extension() *OpenAIExtension {
	refs := b.fold.References()
	if refs == nil {
		refs = []eventbus.Reference{}
	}
	return &OpenAIExtension{StreamID: b.streamID, Status: b.fold.Status(), References: refs}
}

func (b *completionBuilder) chunk(delta openAIDelta, finish *string) openAIChunk {
	return openAIChunk{ID: b.id, Object: "chat.completion.chunk", Created: b.created, Model: b.model,
		Choices: []openAIChunkChoice{{Delta: delta, FinishReason: finish}}}
}
