package run

import (
	"sync"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/secrets"
)

// guard sits between the plugins and a stream's bus. It keeps the stream
// well-formed whatever the plugins do: stream.finished is emitted only by
// the run (and exactly once), nothing follows it, and blocks a plugin left
// open (thinking, answer, tool calls) are closed before the end — with a
// closing </think> when the thinking block was opened with a tag — by the
// rules of eventbus.OpenBlocks, which ending a lost stream (EndLost)
// follows too, so a stream ends balanced whichever replica ends it.
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
	open     eventbus.OpenBlocks // what the stream's events left open, subagents' included
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
	g.open.Track(&ev)
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

// closeOpen ends every block still open.
func (g *guard) closeOpen() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished {
		return
	}
	for _, ev := range g.open.Close() {
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
