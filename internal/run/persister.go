package run

import (
	"sync"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/message"
)

// persister is the bus subscriber that gathers what the assistant message
// will be saved as, through the one event → message fold
// (message.Fold): the text is exactly what readers received, less the
// think tags. The run saves it once, at the end; meanwhile the partial
// saver may read the text (see startPartialSaves).
type persister struct {
	mu      sync.Mutex // guards fold and unsaved against the partial saver
	fold    message.Fold
	unsaved int    // text changes since the last snapshot
	every   int    // nudge the partial saver after this many; 0 = never
	nudge   func() // tells the partial saver this run is due; nil until it registers
}

// persistedTypes are the events the persister needs.
var persistedTypes = []eventbus.Type{
	eventbus.TypeAnswerDelta, eventbus.TypeThinkingStart, eventbus.TypeThinkingDelta, eventbus.TypeReferences,
	eventbus.TypeUsage, eventbus.TypeError, eventbus.TypeModelCallStarted, eventbus.TypeModelCallFinished,
	eventbus.TypeStage, eventbus.TypeToolCallStart, eventbus.TypeToolCallEnd, eventbus.TypeToolResult,
}

func (p *persister) handle(ev *eventbus.Event) {
	p.mu.Lock()
	var nudge func()
	if p.fold.Add(ev).Changed() {
		p.unsaved++
		if p.every > 0 && p.unsaved >= p.every {
			nudge = p.nudge
		}
	}
	p.mu.Unlock()
	if nudge != nil {
		nudge() // cheap: marks the run due unless it is already
	}
}

// newPersister returns a persister of the answer of model ("" = every
// event's) that nudges a partial saver every `every` text changes (0 =
// only on its timer).
func newPersister(model string, every int) *persister {
	return &persister{fold: message.Fold{Model: model}, every: every}
}

// setNudge sets what handle calls every `every` text changes.
func (p *persister) setNudge(f func()) {
	p.mu.Lock()
	p.nudge = f
	p.mu.Unlock()
}

// snapshot returns the text so far, and whether anything arrived since the
// last snapshot. The strings share the fold's memory, which never changes
// once handed out.
func (p *persister) snapshot() (answer, thinking string, changed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unsaved == 0 {
		return "", "", false
	}
	p.unsaved = 0
	return p.fold.Content(), p.fold.Thinking(), true
}

// final is the message to save with the given status.
func (p *persister) final(status string) history.Final {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fold.Final(status)
}
