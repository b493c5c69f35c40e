package pipelinetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/internal/chatmodel"
)

// Script is what the scripted model does with one call.
type Script struct {
	// Chunks are streamed in order, one per Recv.
	Chunks []Chunk
	// Err, when set, is what Recv returns after the chunks instead of
	// io.EOF: a stream that fails after len(Chunks) chunks.
	Err error
	// StreamErr, when set, is returned by Stream (and Generate) itself: the
	// call fails before any chunk.
	StreamErr error
	// Latency is the pause before the first chunk; Delay the pause before
	// each later one.
	Latency, Delay time.Duration
	// Hold, when set, stops the stream before chunk HoldAfter (0-based)
	// until the gate is released or the call's context ends.
	Hold      *Gate
	HoldAfter int
}

// Chunk is one streamed message delta.
type Chunk struct {
	Content      string
	Reasoning    string // reasoning_content: becomes thinking events
	ToolCalls    []schema.ToolCall
	FinishReason string
	Usage        *schema.TokenUsage
}

// Answer returns text as content chunks cut into about pieces parts,
// followed by a chunk that carries only the finish reason "stop".
func Answer(text string, pieces int) []Chunk {
	return append(Content(text, pieces), Chunk{FinishReason: "stop"})
}

// Content returns text as content chunks cut into about pieces parts.
func Content(text string, pieces int) []Chunk {
	return Deltas(Split(text, pieces)...)
}

// Deltas returns one content chunk per part, as given.
func Deltas(parts ...string) []Chunk {
	out := make([]Chunk, len(parts))
	for i, p := range parts {
		out[i] = Chunk{Content: p}
	}
	return out
}

// Reasoning returns text as reasoning chunks cut into about pieces parts.
func Reasoning(text string, pieces int) []Chunk {
	var out []Chunk
	for _, p := range Split(text, pieces) {
		out = append(out, Chunk{Reasoning: p})
	}
	return out
}

// ToolCall returns one tool call streamed OpenAI-style: the first delta
// carries the id and name, then args arrives in about pieces fragments.
func ToolCall(index int, id, name, args string, pieces int) []Chunk {
	parts := Split(args, pieces)
	if len(parts) == 0 {
		parts = []string{""}
	}
	out := make([]Chunk, len(parts))
	for i, p := range parts {
		tc := schema.ToolCall{Index: &index, Function: schema.FunctionCall{Arguments: p}}
		if i == 0 {
			tc.ID, tc.Function.Name = id, name
		}
		out[i] = Chunk{ToolCalls: []schema.ToolCall{tc}}
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
	pieces = max(1, min(pieces, n))
	out := make([]string, 0, pieces)
	start, runes := 0, 0
	for i := range text {
		if runes > 0 && runes*pieces/n != (runes-1)*pieces/n {
			out = append(out, text[start:i])
			start = i
		}
		runes++
	}
	return append(out, text[start:])
}

// Gate holds a scripted stream until the test releases it, and tells the
// test when a stream got there. Release is idempotent.
type Gate struct {
	release, reached         chan struct{}
	releaseOnce, reachedOnce sync.Once
}

// NewGate returns a closed gate.
func NewGate() *Gate { return &Gate{release: make(chan struct{}), reached: make(chan struct{})} }

// Release lets held streams continue, now and later.
func (g *Gate) Release() { g.releaseOnce.Do(func() { close(g.release) }) }

// Reached is closed once a stream has arrived at the gate, after every
// chunk before it was received.
func (g *Gate) Reached() <-chan struct{} { return g.reached }

func (g *Gate) arrive() { g.reachedOnce.Do(func() { close(g.reached) }) }

// Call is one request the scripted model received.
type Call struct {
	Messages []*schema.Message
	Stream   bool // Stream rather than Generate
}

// DefaultScript is what a call gets when the queue is empty and
// SetDefault was not called.
func DefaultScript() Script {
	return Script{Chunks: Answer("Hello from the scripted model.", 3)}
}

// Model is an in-process model.ToolCallingChatModel that replays scripts,
// one per call in order, then the default script. It records every call.
// Its Stream starts no goroutine: chunks are produced inside Recv, so a
// closed reader simply stops the stream, and a cancelled context ends it
// at the next Recv (or during a pause or hold) with the context's cause.
//
// A *Model is also a chatmodel.Source serving itself under every
// model name, so Request{Models: model} works for any chain.
type Model struct {
	mu      sync.Mutex
	queue   []Script
	def     Script
	calls   []Call
	changed chan struct{} // closed and replaced on every call
}

// NewModel returns a model that replays scripts in order.
func NewModel(scripts ...Script) *Model {
	return &Model{queue: scripts, def: DefaultScript(), changed: make(chan struct{})}
}

// Enqueue adds scripts for the next calls.
func (m *Model) Enqueue(scripts ...Script) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queue = append(m.queue, scripts...)
}

// SetDefault sets what calls get once the queue is empty.
func (m *Model) SetDefault(sc Script) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.def = sc
}

// Calls returns the calls so far.
func (m *Model) Calls() []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Call(nil), m.calls...)
}

// WaitCalls waits until the model has had n calls or ctx ends.
func (m *Model) WaitCalls(ctx context.Context, n int) error {
	for {
		m.mu.Lock()
		got, changed := len(m.calls), m.changed
		m.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("pipelinetest: %d of %d model calls: %w", got, n, ctx.Err())
		}
	}
}

// ChatModel implements chatmodel.Source: the model under any name.
func (m *Model) ChatModel(name string) (*chatmodel.Model, error) {
	return &chatmodel.Model{Name: name, Provider: "scripted", Model: m}, nil
}

// take records a call and returns its script.
func (m *Model) take(msgs []*schema.Message, stream bool) Script {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, Call{Messages: msgs, Stream: stream})
	close(m.changed)
	m.changed = make(chan struct{})
	if len(m.queue) == 0 {
		return m.def
	}
	sc := m.queue[0]
	m.queue = m.queue[1:]
	return sc
}

// Stream implements model.BaseChatModel.
func (m *Model) Stream(ctx context.Context, msgs []*schema.Message, _ ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	sc := m.take(msgs, true)
	if sc.StreamErr != nil {
		return nil, sc.StreamErr
	}
	steps := make([]int, len(sc.Chunks), len(sc.Chunks)+1)
	for i := range steps {
		steps[i] = i
	}
	if sc.Err != nil {
		steps = append(steps, len(sc.Chunks))
	}
	return schema.StreamReaderWithConvert(schema.StreamReaderFromArray(steps), func(i int) (*schema.Message, error) {
		if err := sc.wait(ctx, i); err != nil {
			return nil, err
		}
		if i == len(sc.Chunks) {
			return nil, sc.Err
		}
		return sc.Chunks[i].message(), nil
	}), nil
}

// wait pauses before chunk i as the script says; it returns the cause of
// ctx when ctx ends first.
func (sc *Script) wait(ctx context.Context, i int) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if sc.Hold != nil && i == sc.HoldAfter {
		sc.Hold.arrive()
		select {
		case <-sc.Hold.release:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	d := sc.Delay
	if i == 0 {
		d = sc.Latency
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Generate implements model.BaseChatModel: the script's chunks joined
// into one message (its Err, if any, is returned instead).
func (m *Model) Generate(ctx context.Context, msgs []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	sc := m.take(msgs, false)
	if sc.StreamErr != nil {
		return nil, sc.StreamErr
	}
	var content, reasoning strings.Builder
	out := &schema.Message{Role: schema.Assistant}
	for i, c := range sc.Chunks {
		if err := sc.wait(ctx, i); err != nil {
			return nil, err
		}
		content.WriteString(c.Content)
		reasoning.WriteString(c.Reasoning)
		out.ToolCalls = append(out.ToolCalls, c.ToolCalls...)
	}
	if sc.Err != nil {
		return nil, sc.Err
	}
	out.Content, out.ReasoningContent = content.String(), reasoning.String()
	return out, nil
}

// WithTools implements model.ToolCallingChatModel; the scripts decide
// what is called, so the tools are ignored.
func (m *Model) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

func (c Chunk) message() *schema.Message {
	msg := &schema.Message{Role: schema.Assistant, Content: c.Content, ReasoningContent: c.Reasoning,
		ToolCalls: c.ToolCalls}
	if c.FinishReason != "" || c.Usage != nil {
		msg.ResponseMeta = &schema.ResponseMeta{FinishReason: c.FinishReason, Usage: c.Usage}
	}
	return msg
}

// ErrScripted is an error for scripts to fail with.
var ErrScripted = errors.New("pipelinetest: scripted failure")

var _ model.ToolCallingChatModel = (*Model)(nil)
var _ chatmodel.Source = (*Model)(nil)
