package eventbus

import (
	"slices"
	"strings"
)

// Think tags: with think_tags on, a thinking block's deltas read
// "<think>…</think>".
const (
	ThinkOpenTag  = "<think>"
	ThinkCloseTag = "</think>"
)

// OpenBlocks follows which blocks (thinking, answer, tool calls) are open
// in the events that pass through it, for the main answer and for each
// subagent (by origin) apart, and makes the events that close them. Every
// place that may end a stream's output early uses it — the run's guard,
// sensitive_filter's stop, a research subagent's end, and the replica
// that ends a lost generation from its log — so every ending closes
// blocks by the same rules: a thinking block whose first delta opened a
// <think> tag gets its closing "</think>" delta before thinking.end, then
// the answer ends, then the tool calls in the order they started.
//
// The zero value is ready. It is not safe for concurrent use: its owner
// serialises Track and Close, in the order the events go out.
type OpenBlocks struct {
	main agentBlocks
	subs []subBlocks // by origin, in the order they first opened a block
}

type subBlocks struct {
	origin []Hop
	agentBlocks
}

// agentBlocks is the open blocks of one agent's events.
type agentBlocks struct {
	thinking  thinkState
	thinkSeen bool     // the open thinking block has had a delta
	answer    bool     // an answer block is open
	tools     []string // open tool calls, in the order they started
}

type thinkState uint8

const (
	thinkClosed thinkState = iota
	thinkOpen
	thinkTagged // open, and its first delta opened a <think> tag not yet closed
)

// Track notes the effect of ev, which is passing on, on the blocks of its
// agent (ev.Origin).
func (o *OpenBlocks) Track(ev *Event) {
	if !ev.IsSub() {
		o.main.track(ev)
		return
	}
	for i := range o.subs {
		if slices.Equal(o.subs[i].origin, ev.Origin) {
			o.subs[i].track(ev)
			return
		}
	}
	var a agentBlocks
	a.track(ev)
	if a.open() { // agents are remembered only once they open a block
		o.subs = append(o.subs, subBlocks{origin: ev.Origin, agentBlocks: a})
	}
}

// Close returns the events that close every open block, and marks them
// closed: the subagents' first (the deepest first, then in the order they
// opened), each carrying its origin, then the main answer's.
func (o *OpenBlocks) Close() []Event {
	subs := slices.Clone(o.subs)
	slices.SortStableFunc(subs, func(a, b subBlocks) int { return len(b.origin) - len(a.origin) })
	var evs []Event
	for _, s := range subs {
		for _, ev := range s.close() {
			ev.Origin = s.origin
			evs = append(evs, ev)
		}
	}
	o.subs = o.subs[:0]
	return append(evs, o.main.close()...)
}

func (a *agentBlocks) open() bool { return a.thinking != thinkClosed || a.answer || len(a.tools) > 0 }

func (a *agentBlocks) track(ev *Event) {
	switch ev.Type {
	case TypeThinkingStart:
		a.thinking, a.thinkSeen = thinkOpen, false
	case TypeThinkingDelta:
		if a.thinking == thinkOpen && !a.thinkSeen {
			a.thinkSeen = true
			if strings.HasPrefix(ev.Text, ThinkOpenTag) {
				a.thinking = thinkTagged
			}
		}
		if a.thinking == thinkTagged && ev.Text == ThinkCloseTag {
			a.thinking = thinkOpen // the emitter closed its tag itself
		}
	case TypeThinkingEnd:
		a.thinking = thinkClosed
	case TypeAnswerStart:
		a.answer = true
	case TypeAnswerEnd:
		a.answer = false
	case TypeToolCallStart, TypeToolCallEnd:
		tc, ok := ev.Payload.(ToolCall)
		if !ok {
			return
		}
		a.tools = slices.DeleteFunc(a.tools, func(id string) bool { return id == tc.ToolCallID })
		if ev.Type == TypeToolCallStart {
			a.tools = append(a.tools, tc.ToolCallID)
		}
	}
}

// close returns the events that close this agent's open blocks (without
// an origin), and marks them closed.
func (a *agentBlocks) close() []Event {
	var evs []Event
	if a.thinking == thinkTagged {
		evs = append(evs, Delta(TypeThinkingDelta, ThinkCloseTag))
	}
	if a.thinking != thinkClosed {
		evs = append(evs, Event{Type: TypeThinkingEnd})
	}
	if a.answer {
		evs = append(evs, Event{Type: TypeAnswerEnd})
	}
	for _, id := range a.tools {
		evs = append(evs, Of(TypeToolCallEnd, ToolCall{ToolCallID: id}))
	}
	*a = agentBlocks{}
	return evs
}
