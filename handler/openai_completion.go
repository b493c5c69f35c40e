package handler

import (
	"cmp"
	"net/http"
	"strings"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
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

// completionBuilder turns a run's events into a chat completion. Thinking
// is sent as reasoning_content, or — with tags — as <think>…</think> in
// content; either way chatpipe's own think tags (think_tags in the mode's
// config) are taken off first, so the output does not depend on them.
type completionBuilder struct {
	id, model, streamID string
	created             int64
	tags                bool

	content, reasoning strings.Builder
	pending            []piece // sent by the next emit
	refs               []eventbus.Reference
	usage              *eventbus.Usage
	status, reason     string
	err                *eventbus.Error

	thinkFirst bool // the next thinking delta opens its block
	tagOpen    bool // a <think> was sent and not yet closed
	// mark is where content and reasoning stood when the current model
	// call attempt started. Only a whole completion (stream: false) sees
	// an attempt withdrawn: a streaming one asks its run not to retry
	// mid-stream, since it cannot take back what it sent.
	mark [2]int
}

func newCompletionBuilder(streamID, model string, tags bool) *completionBuilder {
	return &completionBuilder{id: "chatcmpl-" + streamID, model: model, streamID: streamID,
		created: time.Now().Unix(), tags: tags}
}

func (b *completionBuilder) apply(ev eventbus.Event) {
	if ev.IsSub() {
		return // a subagent's work (research mode) is not part of the completion
	}
	switch ev.Type {
	case eventbus.TypeThinkingStart:
		b.thinkFirst = true
	case eventbus.TypeThinkingDelta:
		text := ev.Text
		if b.thinkFirst {
			text = strings.TrimPrefix(text, "<think>")
		}
		if text == "" || text == "</think>" {
			return
		}
		b.thinkFirst = false
		if !b.tags {
			b.add(piece{text: text, reasoning: true})
			return
		}
		if !b.tagOpen {
			b.tagOpen = true
			text = "<think>" + text
		}
		b.add(piece{text: text})
	case eventbus.TypeThinkingEnd:
		b.closeTag()
	case eventbus.TypeAnswerDelta:
		b.closeTag()
		b.add(piece{text: ev.Text})
	case eventbus.TypeReferences:
		if p, ok := ev.Payload.(eventbus.References); ok {
			b.refs = p.Items
		}
	case eventbus.TypeModelCallStarted:
		b.mark = [2]int{b.content.Len(), b.reasoning.Len()}
	case eventbus.TypeModelCallFinished:
		if p, ok := ev.Payload.(eventbus.ModelCall); ok && p.Committed != nil && !*p.Committed {
			b.withdraw()
		}
	case eventbus.TypeUsage:
		if p, ok := ev.Payload.(eventbus.Usage); ok {
			b.usage = &p
		}
	case eventbus.TypeError:
		if p, ok := ev.Payload.(eventbus.Error); ok && b.err == nil {
			b.err = &p
		}
	case eventbus.TypeStreamFinished:
		b.closeTag()
		if p, ok := ev.Payload.(eventbus.Finished); ok {
			b.status, b.reason = p.Status, p.Reason
		}
	}
}

// withdraw drops the text of an uncommitted model call attempt.
func (b *completionBuilder) withdraw() {
	cut := func(sb *strings.Builder, n int) {
		if sb.Len() > n {
			s := sb.String()[:n]
			*sb = strings.Builder{}
			sb.WriteString(s)
		}
	}
	cut(&b.content, b.mark[0])
	cut(&b.reasoning, b.mark[1])
	b.tagOpen = false
}

func (b *completionBuilder) closeTag() {
	if b.tagOpen {
		b.tagOpen = false
		b.add(piece{text: "</think>"})
	}
}

// add queues text, merged with the previous piece of the same kind.
func (b *completionBuilder) add(p piece) {
	if p.text == "" {
		return
	}
	if p.reasoning {
		b.reasoning.WriteString(p.text)
	} else {
		b.content.WriteString(p.text)
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
	switch {
	case b.status == eventbus.StatusCompleted, b.status == eventbus.StatusStopped:
		return "stop"
	case b.status == eventbus.StatusFailed && (b.reason == "content_filtered" || b.reason == "content_filter"):
		return "content_filter" // sensitive_filter (or another plugin) ended the answer
	}
	return ""
}

// failure is the OpenAI error and HTTP status of a failed run.
func (b *completionBuilder) failure() (int, openAIErrorBody) {
	code, msg, status := b.reason, "The answer could not be completed.", http.StatusInternalServerError
	if b.err != nil {
		code = cmp.Or(b.err.Code, code)
		msg = cmp.Or(b.err.Message, msg)
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
	if b.usage != nil {
		u.PromptTokens, u.CompletionTokens = b.usage.PromptTokens, b.usage.CompletionTokens
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		u.CompletionTokensDetails.ReasoningTokens = b.usage.ReasoningTokens
	}
	return u
}

func (b *completionBuilder) extension() *OpenAIExtension {
	refs := b.refs
	if refs == nil {
		refs = []eventbus.Reference{}
	}
	return &OpenAIExtension{StreamID: b.streamID, Status: b.status, References: refs}
}

func (b *completionBuilder) chunk(delta openAIDelta, finish *string) openAIChunk {
	return openAIChunk{ID: b.id, Object: "chat.completion.chunk", Created: b.created, Model: b.model,
		Choices: []openAIChunkChoice{{Delta: delta, FinishReason: finish}}}
}
