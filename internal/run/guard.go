package run

import (
	"strings"
	"sync"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/secrets"
)

// guard sits between the plugins and a stream's bus. It keeps the stream
// well-formed whatever the plugins do: stream.finished is emitted only by
// the run (and exactly once), nothing follows it, and blocks a plugin left
// open (thinking, answer, tool calls) are closed before the end — with a
// closing </think> when the thinking block was opened with a tag.
//
// It is also where errors become user-visible: every error message and
// stage detail passes through the configuration's redactor here, before
// any subscriber (stream store, persister, logger, OpenAI-compatible
// readers) sees it, so no configured secret reaches a user or a saved
// message whichever plugin or provider put it in the text.
type guard struct {
	mu       sync.Mutex
	bus      *eventbus.Bus
	finished bool
	open     openBlocks
	// model, when set, places every event with this model: one guard per
	// model answering side by side, each keeping its own blocks balanced.
	model string
	// redact removes the configured secrets from error texts; nil = none.
	redact *secrets.Redactor
}

func newGuard(bus *eventbus.Bus, redact *secrets.Redactor) *guard {
	return &guard{bus: bus, redact: redact}
}

// Emit implements eventbus.Emitter for plugins.
func (g *guard) Emit(ev eventbus.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished || ev.Type == eventbus.TypeStreamFinished || ev.Type == eventbus.TypeResyncRequired {
		return
	}
	g.open.track(&ev)
	g.emit(ev)
}

// emit publishes ev, placed with the guard's model and with its error
// texts redacted; g.mu is held.
func (g *guard) emit(ev eventbus.Event) {
	switch p := ev.Payload.(type) {
	case eventbus.Error:
		p.Message = g.redact.Redact(p.Message)
		ev.Payload = p
	case eventbus.Stage:
		if p.Detail != "" {
			p.Detail = g.redact.Redact(p.Detail)
			ev.Payload = p
		}
	}
	if g.model != "" {
		var p eventbus.Placement
		if ev.Placement != nil {
			p = *ev.Placement
		}
		p.Model = g.model
		ev.Placement = &p
	}
	g.bus.Emit(ev)
}

// openBlocks follows which blocks of a stream are open. The guard feeds it
// every event it passes on; ending a lost stream (EndLost) feeds it the
// stream's log. Both then close what is open with the same events, so a
// stream ends balanced whichever replica ends it.
type openBlocks struct {
	thinking  int // 0 closed, 1 open, 2 open with a <think> tag
	thinkSeen bool
	answer    bool
	tools     []string // open tool calls, in the order they started
}

func (o *openBlocks) track(ev *eventbus.Event) {
	if ev.IsSub() {
		return // a subagent's blocks are its runner's to close (research_run does)
	}
	switch ev.Type {
	case eventbus.TypeThinkingStart:
		o.thinking, o.thinkSeen = 1, false
	case eventbus.TypeThinkingDelta:
		if o.thinking == 1 && !o.thinkSeen {
			o.thinkSeen = true
			if strings.HasPrefix(ev.Text, "<think>") {
				o.thinking = 2
			}
		}
		if o.thinking == 2 && ev.Text == "</think>" {
			o.thinking = 1 // the plugin closed its tag itself
		}
	case eventbus.TypeThinkingEnd:
		o.thinking = 0
	case eventbus.TypeAnswerStart:
		o.answer = true
	case eventbus.TypeAnswerEnd:
		o.answer = false
	case eventbus.TypeToolCallStart, eventbus.TypeToolCallEnd:
		tc, ok := ev.Payload.(eventbus.ToolCall)
		if !ok {
			return
		}
		for i, id := range o.tools {
			if id == tc.ToolCallID {
				o.tools = append(o.tools[:i], o.tools[i+1:]...)
				break
			}
		}
		if ev.Type == eventbus.TypeToolCallStart {
			o.tools = append(o.tools, tc.ToolCallID)
		}
	}
}

// closing returns the events that end every open block, in the order a
// client expects, and marks them closed.
func (o *openBlocks) closing() []eventbus.Event {
	var evs []eventbus.Event
	if o.thinking == 2 {
		evs = append(evs, eventbus.Delta(eventbus.TypeThinkingDelta, "</think>"))
	}
	if o.thinking != 0 {
		evs = append(evs, eventbus.Event{Type: eventbus.TypeThinkingEnd})
	}
	if o.answer {
		evs = append(evs, eventbus.Event{Type: eventbus.TypeAnswerEnd})
	}
	for _, id := range o.tools {
		evs = append(evs, eventbus.Of(eventbus.TypeToolCallEnd, eventbus.ToolCall{ToolCallID: id}))
	}
	*o = openBlocks{}
	return evs
}

// closeOpen ends every block still open.
func (g *guard) closeOpen() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished {
		return
	}
	for _, ev := range g.open.closing() {
		g.emit(ev)
	}
}

// emitInternal publishes an event of the run itself (error, usage).
func (g *guard) emitInternal(ev eventbus.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.finished {
		g.emit(ev)
	}
}

// finish publishes the terminal event; later emits are dropped.
func (g *guard) finish(f eventbus.Finished) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished {
		return
	}
	g.finished = true
	g.bus.Emit(eventbus.Of(eventbus.TypeStreamFinished, f))
}
