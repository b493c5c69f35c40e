package run

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/citation"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/think"
)

// persister is the bus subscriber that gathers what the assistant message
// will be saved as: the concatenated answer and thinking deltas (so the
// saved text is exactly what readers received, less the think tags, which
// are a wire format), the last references, the
// usage and the first error. The run saves it once, at the end; meanwhile
// the partial saver may read the text (see startPartialSaves).
type persister struct {
	mu       sync.Mutex // guards answer, thinking and unsaved against the partial saver
	answer   strings.Builder
	thinking strings.Builder
	untag    think.Untag
	unsaved  int           // deltas since the last snapshot
	every    int           // nudge the partial saver after this many deltas; 0 = never
	due      chan struct{} // the nudge (one pending at most)

	references []eventbus.Reference
	usage      *eventbus.Usage
	errMsg     string
	// The durable record: stage outcomes and tool calls, guarded by mu.
	stages   []history.StageTiming
	calls    []history.ToolCall
	callEnds map[string]time.Time // when each call's arguments were complete
	now      func() time.Time
	// model, when set, keeps only the events placed with this model: the
	// answer of one model of several answering side by side.
	model string
}

// persistedTypes are the events the persister needs.
var persistedTypes = []eventbus.Type{
	eventbus.TypeAnswerDelta, eventbus.TypeThinkingStart, eventbus.TypeThinkingDelta, eventbus.TypeReferences,
	eventbus.TypeUsage, eventbus.TypeError,
	eventbus.TypeStage, eventbus.TypeToolCallStart, eventbus.TypeToolCallEnd, eventbus.TypeToolResult,
}

func (p *persister) handle(ev *eventbus.Event) {
	if p.model != "" && (ev.Placement == nil || ev.Placement.Model != p.model) {
		return
	}
	switch ev.Type {
	case eventbus.TypeAnswerDelta:
		p.addText(&p.answer, ev.Text)
	case eventbus.TypeThinkingStart:
		p.untag.Start()
	case eventbus.TypeThinkingDelta:
		p.addText(&p.thinking, p.untag.Delta(ev.Text))
	case eventbus.TypeReferences:
		if r, ok := ev.Payload.(eventbus.References); ok {
			p.references = r.Items
		}
	case eventbus.TypeUsage:
		if u, ok := ev.Payload.(eventbus.Usage); ok {
			p.usage = &u
		}
	case eventbus.TypeError:
		if e, ok := ev.Payload.(eventbus.Error); ok && p.errMsg == "" {
			p.errMsg = e.Message
		}
	case eventbus.TypeStage, eventbus.TypeToolCallStart, eventbus.TypeToolCallEnd, eventbus.TypeToolResult:
		p.mu.Lock()
		p.record(ev)
		p.mu.Unlock()
	}
}

// record adds a stage's outcome or a tool call's progress to the record.
func (p *persister) record(ev *eventbus.Event) {
	switch pl := ev.Payload.(type) {
	case eventbus.Stage:
		if pl.Status != eventbus.StageStarted {
			p.stages = append(p.stages, history.StageTiming{Name: pl.Name, Status: pl.Status, ElapsedMS: pl.ElapsedMS, Detail: pl.Detail})
		}
	case eventbus.ToolCall:
		i := p.call(pl.ToolCallID)
		if ev.Type == eventbus.TypeToolCallStart {
			if i < 0 {
				c := history.ToolCall{ID: pl.ToolCallID, Name: pl.Name}
				if ev.Placement != nil {
					c.Turn = ev.Placement.Turn
				}
				p.calls = append(p.calls, c)
			}
			return
		}
		if ev.Type == eventbus.TypeToolCallEnd && i >= 0 {
			p.calls[i].Arguments = pl.Arguments
			p.calls[i].Name = cmp.Or(pl.Name, p.calls[i].Name)
			if p.callEnds == nil {
				p.callEnds = map[string]time.Time{}
			}
			p.callEnds[pl.ToolCallID] = p.now()
		}
	case eventbus.ToolResult:
		if i := p.call(pl.ToolCallID); i >= 0 {
			p.calls[i].Output, p.calls[i].Status = pl.Output, pl.Status
			if end, ok := p.callEnds[pl.ToolCallID]; ok {
				p.calls[i].DurationMS = p.now().Sub(end).Milliseconds()
			}
		}
	}
}

// call is the index of the tool call with this id, or -1.
func (p *persister) call(id string) int {
	return slices.IndexFunc(p.calls, func(c history.ToolCall) bool { return c.ID == id })
}

// newPersister returns a persister that nudges a partial saver every
// `every` deltas (0 = only on its timer).
func newPersister(model string, every int) *persister {
	return &persister{model: model, every: every, due: make(chan struct{}, 1), now: time.Now}
}

func (p *persister) addText(b *strings.Builder, text string) {
	p.mu.Lock()
	b.WriteString(text)
	p.unsaved++
	nudge := p.every > 0 && p.unsaved >= p.every
	p.mu.Unlock()
	if nudge {
		select {
		case p.due <- struct{}{}:
		default: // a nudge is pending already
		}
	}
}

// snapshot returns the text so far, and whether anything arrived since the
// last snapshot. The strings share the builders' memory: a builder only
// appends, so the bytes they cover never change.
func (p *persister) snapshot() (answer, thinking string, changed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unsaved == 0 {
		return "", "", false
	}
	p.unsaved = 0
	return p.answer.String(), p.thinking.String(), true
}

// final is the message to save with the given status.
func (p *persister) final(status string) history.Final {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := history.Final{
		Status:     status,
		Content:    p.answer.String(),
		Thinking:   p.thinking.String(),
		References: p.references,
		Usage:      p.usage,
		Record: &history.Record{
			ToolCalls: slices.Clone(p.calls),
			Stages:    slices.Clone(p.stages),
			Cited:     citation.Cited(p.answer.String(), maxIndex(p.references)),
		},
	}
	if status == history.StatusFailed {
		f.Error = p.errMsg
	}
	return f
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
