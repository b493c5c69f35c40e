package providertest

import (
	"context"
	"sync"
	"time"
	"unicode/utf8"
)

// Script is what the fake provider does with one request. The zero value
// streams nothing but a clean end; use Answer and friends to fill Chunks.
type Script struct {
	// Status rejects the request with this HTTP status when it is neither
	// 0 nor 200, sending Error (or ErrorBody) instead of a stream.
	Status int
	// Error is the error object of a rejected request, rendered in the
	// dialect's format; an empty Message becomes the status text.
	Error ErrorObject
	// ErrorBody, when set, is sent verbatim instead of Error (e.g. the HTML
	// page of a proxy).
	ErrorBody string
	// Header holds extra response headers, e.g. {"Retry-After": "2"}; a
	// Content-Type set here replaces the dialect's (with Raw: a JSON answer).
	Header map[string]string

	// Chunks are streamed in order, each written and flushed on its own.
	Chunks []Chunk
	// Usage is sent after the chunks: OpenAI's usage-only chunk, or the
	// counts on Ollama's done line.
	Usage *Usage
	// Delay is the pause before each chunk after the first.
	Delay time.Duration
	// MidStreamError sends an error object after MidStreamError.After
	// chunks, then ends the response.
	MidStreamError *StreamError
	// Drop closes the connection abruptly after the chunks: no usage, no
	// [DONE], no terminating HTTP chunk.
	Drop bool
	// NoDone ends the response cleanly but without OpenAI's "data: [DONE]"
	// (or Ollama's done line).
	NoDone bool
	// NoRolePreamble skips the role-only first chunk OpenAI sends.
	NoRolePreamble bool
	// Raw, when non-nil, replaces the rendered stream (a 200 response): each
	// string is written verbatim and flushed, with Delay between them. It
	// must carry its own line endings (and "data: [DONE]", if wanted). Hold,
	// HoldAfter and Drop apply; each string counts as a chunk.
	Raw []string

	// HoldHeaders makes the response wait before its headers until the gate
	// is released or the client goes away (header-timeout tests).
	HoldHeaders *Gate
	// Hold makes the stream wait after HoldAfter chunks have been written and
	// flushed, until the gate is released or the client goes away.
	Hold      *Gate
	HoldAfter int
}

// Chunk is one streamed delta.
type Chunk struct {
	Content          string
	ReasoningContent string // OpenAI: delta.reasoning_content; Ollama: message.thinking
	Reasoning        string // OpenAI: delta.reasoning; Ollama: message.thinking
	ToolCalls        []ToolCallDelta
	FinishReason     string
}

// ToolCallDelta is one fragment of a streamed tool call. OpenAI streams a
// call as several deltas sharing an Index (ID and Name on the first);
// Ollama sends it whole, so for Ollama Arguments must be a complete JSON
// object.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// Usage is the token accounting sent at the end of a stream. A zero
// TotalTokens is sent as prompt + completion.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
	ReasoningTokens  int // completion_tokens_details.reasoning_tokens
	CachedTokens     int // prompt_tokens_details.cached_tokens
}

func (u Usage) total() int {
	if u.TotalTokens != 0 {
		return u.TotalTokens
	}
	return u.PromptTokens + u.CompletionTokens
}

// ErrorObject is an OpenAI-style error ({"error":{"message","type","code"}});
// Ollama's dialect sends only the message ({"error":"…"}). An empty Code
// is sent as null.
type ErrorObject struct {
	Message string
	Type    string
	Code    string
}

// StreamError is an error object sent in the middle of a stream.
type StreamError struct {
	After int // chunks written before the error
	ErrorObject
}

// Answer returns text as content chunks cut into about pieces parts,
// followed by a chunk that carries only finish_reason "stop", as OpenAI
// sends it.
func Answer(text string, pieces int) []Chunk {
	return append(Content(text, pieces), Chunk{FinishReason: "stop"})
}

// Content returns text as content chunks without a finish reason (an
// answer still in progress, e.g. before a Drop).
func Content(text string, pieces int) []Chunk {
	var out []Chunk
	for _, p := range Split(text, pieces) {
		out = append(out, Chunk{Content: p})
	}
	return out
}

// ReasoningContent returns text as reasoning_content chunks (DeepSeek,
// older vLLM).
func ReasoningContent(text string, pieces int) []Chunk {
	var out []Chunk
	for _, p := range Split(text, pieces) {
		out = append(out, Chunk{ReasoningContent: p})
	}
	return out
}

// Reasoning returns text as chunks with the "reasoning" key (newer vLLM,
// OpenRouter, Ollama's OpenAI-compatible endpoint).
func Reasoning(text string, pieces int) []Chunk {
	var out []Chunk
	for _, p := range Split(text, pieces) {
		out = append(out, Chunk{Reasoning: p})
	}
	return out
}

// ToolCall returns one tool call streamed OpenAI-style: the first delta
// carries ID and name, then args arrives in about pieces fragments.
func ToolCall(index int, id, name, args string, pieces int) []Chunk {
	var out []Chunk
	for i, p := range Split(args, pieces) {
		d := ToolCallDelta{Index: index, Arguments: p}
		if i == 0 {
			d.ID, d.Name = id, name
		}
		out = append(out, Chunk{ToolCalls: []ToolCallDelta{d}})
	}
	if len(out) == 0 {
		out = append(out, Chunk{ToolCalls: []ToolCallDelta{{Index: index, ID: id, Name: name}}})
	}
	return out
}

// Split cuts text into at most pieces parts of about equal rune counts,
// which concatenate back to text.
func Split(text string, pieces int) []string {
	n := utf8.RuneCountInString(text)
	if n == 0 {
		return nil
	}
	if pieces < 1 {
		pieces = 1
	}
	if pieces > n {
		pieces = n
	}
	out := make([]string, 0, pieces)
	start, runes := 0, 0
	for i := range text {
		// Cut before rune number runes when it starts the next piece.
		if runes > 0 && runes*pieces/n != (runes-1)*pieces/n {
			out = append(out, text[start:i])
			start = i
		}
		runes++
	}
	return append(out, text[start:])
}

// Gate holds a stream at a point until the test releases it, and tells the
// test when a stream got there. Release is idempotent; a released gate
// lets every later stream pass at once.
type Gate struct {
	release     chan struct{}
	releaseOnce sync.Once
	reached     chan struct{}
	reachedOnce sync.Once
}

// NewGate returns a closed gate.
func NewGate() *Gate {
	return &Gate{release: make(chan struct{}), reached: make(chan struct{})}
}

// Release lets held streams continue.
func (g *Gate) Release() { g.releaseOnce.Do(func() { close(g.release) }) }

// Reached is closed once a stream has arrived at the gate (after flushing
// everything before it).
func (g *Gate) Reached() <-chan struct{} { return g.reached }

// WaitReached waits until a stream has arrived at the gate.
func (g *Gate) WaitReached(ctx context.Context) error {
	select {
	case <-g.reached:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *Gate) arrive() { g.reachedOnce.Do(func() { close(g.reached) }) }
