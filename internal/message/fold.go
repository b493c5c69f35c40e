// Package message folds a stream's events into the assistant message they
// make: the one place that knows how an answer is read off its events. The
// run's persister saves what it folds, the non-streaming chat answer and
// the OpenAI-compatible completion return it, MCP ask reports it.
//
// The package is a leaf: it imports the event vocabulary and the history
// store's record types, never the chain engine.
package message

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/citation"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/think"
)

// Fold consumes one stream's events, in order, and keeps the message they
// make:
//
//   - the answer: every answer.delta concatenated;
//   - the thinking: every thinking.delta concatenated, without chatpipe's
//     own <think> tags (they are a wire format, see think.Untag);
//   - the text of a model call attempt that was withdrawn (model_call.finished
//     not committed: the provider stream broke and the call was tried
//     again) is dropped from both;
//   - the last references, the last usage (estimated or not), the first
//     error, and the status and reason of stream.finished;
//   - the stages that ended and the tool calls with their arguments,
//     outputs, statuses and durations (the durable record).
//
// Events with an origin (a subagent's work) are not part of the message,
// and with Model set, neither are events placed with another model. A
// Fold is not safe for concurrent use; its zero value is ready.
type Fold struct {
	// Model, when set, keeps only the events placed with this model: the
	// answer of one of several models answering side by side.
	Model string
	// InlineThinking also keeps Inline: the content as a client that asked
	// for think tags reads it, thinking wrapped in <think>…</think> where
	// it came. Add then reports the inline text instead of the thinking.
	InlineThinking bool
	// Now times tool calls; nil = time.Now.
	Now func() time.Time

	started   *eventbus.StreamStarted
	startedAt int64 // unix milliseconds

	answer, thinking, inline strings.Builder
	untag                    think.Untag
	tagOpen                  bool // InlineThinking: a <think> is open in inline
	// mark is where answer, thinking and inline stood when the current
	// model call attempt started: a withdrawn attempt is cut back to it.
	mark [3]int

	refs   []eventbus.Reference
	usage  *eventbus.Usage
	err    *eventbus.Error
	status string
	reason string

	stages   []history.StageTiming
	calls    []history.ToolCall
	callEnds map[string]time.Time // when each call's arguments were complete
}

// Added is what one event added to the message's text.
type Added struct {
	// Text is the answer or clean thinking text the event added; with
	// InlineThinking, the inline text (tags included).
	Text string
	// Thinking says Text is thinking (never with InlineThinking).
	Thinking bool
	// Withdrawn says a model call attempt was withdrawn: text added
	// since its start is gone.
	Withdrawn bool
}

// Changed reports whether the message's text changed.
func (a Added) Changed() bool { return a.Text != "" || a.Withdrawn }

// Add folds ev in and returns what it added to the text. ev is not kept.
func (f *Fold) Add(ev *eventbus.Event) Added {
	if ev.IsSub() {
		return Added{} // a subagent's output is on the stream; the message is the main answer
	}
	if f.Model != "" && (ev.Placement == nil || ev.Placement.Model != f.Model) {
		return Added{}
	}
	switch ev.Type {
	case eventbus.TypeStreamStarted:
		if p, ok := ev.Payload.(eventbus.StreamStarted); ok {
			f.started, f.startedAt = &p, ev.Time
		}
	case eventbus.TypeAnswerDelta:
		return f.addAnswer(ev.Text)
	case eventbus.TypeThinkingStart:
		f.untag.Start()
	case eventbus.TypeThinkingDelta:
		return f.addThinking(f.untag.Delta(ev.Text))
	case eventbus.TypeThinkingEnd:
		return Added{Text: f.closeTag()}
	case eventbus.TypeReferences:
		if p, ok := ev.Payload.(eventbus.References); ok {
			f.refs = p.Items
		}
	case eventbus.TypeUsage:
		if p, ok := ev.Payload.(eventbus.Usage); ok {
			f.usage = &p
		}
	case eventbus.TypeError:
		if p, ok := ev.Payload.(eventbus.Error); ok && f.err == nil {
			f.err = &p
		}
	case eventbus.TypeModelCallStarted:
		f.mark = [3]int{f.answer.Len(), f.thinking.Len(), f.inline.Len()}
	case eventbus.TypeModelCallFinished:
		if p, ok := ev.Payload.(eventbus.ModelCall); ok && p.Committed != nil && !*p.Committed {
			f.withdraw()
			return Added{Withdrawn: true}
		}
	case eventbus.TypeStage:
		if p, ok := ev.Payload.(eventbus.Stage); ok && p.Status != eventbus.StageStarted {
			f.stages = append(f.stages, history.StageTiming{Name: p.Name, Status: p.Status, ElapsedMS: p.ElapsedMS, Detail: p.Detail})
		}
	case eventbus.TypeToolCallStart, eventbus.TypeToolCallEnd:
		if p, ok := ev.Payload.(eventbus.ToolCall); ok {
			f.toolCall(ev, p)
		}
	case eventbus.TypeToolResult:
		if p, ok := ev.Payload.(eventbus.ToolResult); ok {
			f.toolResult(p)
		}
	case eventbus.TypeStreamFinished:
		text := f.closeTag()
		if p, ok := ev.Payload.(eventbus.Finished); ok {
			f.status, f.reason = p.Status, p.Reason
		}
		return Added{Text: text}
	}
	return Added{}
}

func (f *Fold) addAnswer(text string) Added {
	f.answer.WriteString(text)
	if !f.InlineThinking {
		return Added{Text: text}
	}
	closed := f.closeTag()
	f.inline.WriteString(text)
	if closed != "" {
		text = closed + text
	}
	return Added{Text: text}
}

func (f *Fold) addThinking(text string) Added {
	if text == "" {
		return Added{}
	}
	f.thinking.WriteString(text)
	if !f.InlineThinking {
		return Added{Text: text, Thinking: true}
	}
	if !f.tagOpen {
		f.tagOpen = true
		text = "<think>" + text
	}
	f.inline.WriteString(text)
	return Added{Text: text}
}

// closeTag closes an open <think> in the inline text and returns what it
// added.
func (f *Fold) closeTag() string {
	if !f.tagOpen {
		return ""
	}
	f.tagOpen = false
	f.inline.WriteString("</think>")
	return "</think>"
}

// withdraw drops the text of the attempt that was not committed. The
// builders are replaced, not cut: strings handed out earlier share their
// memory and must not change.
func (f *Fold) withdraw() {
	cut := func(b *strings.Builder, n int) {
		if b.Len() > n {
			s := b.String()[:n]
			*b = strings.Builder{}
			b.WriteString(s)
		}
	}
	cut(&f.answer, f.mark[0])
	cut(&f.thinking, f.mark[1])
	cut(&f.inline, f.mark[2])
	f.tagOpen = false
}

func (f *Fold) toolCall(ev *eventbus.Event, p eventbus.ToolCall) {
	i := f.call(p.ToolCallID)
	switch {
	case ev.Type == eventbus.TypeToolCallStart && i < 0:
		c := history.ToolCall{ID: p.ToolCallID, Name: p.Name}
		if ev.Placement != nil {
			c.Turn = ev.Placement.Turn
		}
		f.calls = append(f.calls, c)
	case ev.Type == eventbus.TypeToolCallEnd && i >= 0:
		f.calls[i].Arguments = p.Arguments
		f.calls[i].Name = cmp.Or(p.Name, f.calls[i].Name)
		if f.callEnds == nil {
			f.callEnds = map[string]time.Time{}
		}
		f.callEnds[p.ToolCallID] = f.now()
	}
}

func (f *Fold) toolResult(p eventbus.ToolResult) {
	i := f.call(p.ToolCallID)
	if i < 0 {
		return
	}
	f.calls[i].Output, f.calls[i].Status = p.Output, p.Status
	if end, ok := f.callEnds[p.ToolCallID]; ok {
		f.calls[i].DurationMS = f.now().Sub(end).Milliseconds()
	}
}

// call is the index of the tool call with this id, or -1.
func (f *Fold) call(id string) int {
	return slices.IndexFunc(f.calls, func(c history.ToolCall) bool { return c.ID == id })
}

func (f *Fold) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Content is the answer so far. The string shares the fold's memory,
// which never changes once handed out.
func (f *Fold) Content() string { return f.answer.String() }

// Thinking is the clean thinking so far (shared memory, as Content).
func (f *Fold) Thinking() string { return f.thinking.String() }

// Inline is the content with thinking wrapped in <think>…</think> where
// it came (InlineThinking only).
func (f *Fold) Inline() string { return f.inline.String() }

// Started is stream.started's payload and time (unix milliseconds); nil
// before it.
func (f *Fold) Started() (*eventbus.StreamStarted, int64) { return f.started, f.startedAt }

// References are the last references sent (nil = none).
func (f *Fold) References() []eventbus.Reference { return f.refs }

// Usage is the last usage sent (nil = none).
func (f *Fold) Usage() *eventbus.Usage { return f.usage }

// Error is the first error sent (nil = none).
func (f *Fold) Error() *eventbus.Error { return f.err }

// ErrorMessage is the first error's message ("" = none).
func (f *Fold) ErrorMessage() string {
	if f.err == nil {
		return ""
	}
	return f.err.Message
}

// Status and Reason are stream.finished's ("" before it).
func (f *Fold) Status() string { return f.status }

// Reason is stream.finished's reason.
func (f *Fold) Reason() string { return f.reason }

// Final is the message to save with the given status: the text, the
// references, the usage, the error when it failed, and the record (tool
// calls, stages, the reference numbers the answer cited).
func (f *Fold) Final(status string) history.Final {
	content := f.answer.String()
	out := history.Final{
		Status:     status,
		Content:    content,
		Thinking:   f.thinking.String(),
		References: f.refs,
		Usage:      f.usage,
		Record: &history.Record{
			ToolCalls: slices.Clone(f.calls),
			Stages:    slices.Clone(f.stages),
			Cited:     citation.Cited(content, maxIndex(f.refs)),
		},
	}
	if status == history.StatusFailed {
		out.Error = f.ErrorMessage()
	}
	return out
}

// maxIndex is the highest reference number, the bound of what an answer
// can cite.
func maxIndex(refs []eventbus.Reference) int {
	n := 0
	for _, r := range refs {
		n = max(n, r.Index)
	}
	return n
}
