package plugins

import (
	"strconv"
	"strings"
	"time"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/eventbus"
)

// cycleEmitter is the emitter of one agent cycle's model call. It places
// the call's events (placement.turn; placement.tab for a tool call's),
// adds the call's usage to the run's total instead of passing it on, and
// separates the answer text of successive cycles with a blank line, so
// that the saved answer reads well.
//
// When tools are offered and text tool calls are looked for, an answer
// that starts like a tool call written as text ({…, [{…, a code fence,
// <tool_call>) is held back until the call ends: finish then either
// extracts the tool call (and the text is never shown) or releases it.
// The answer is held only while it could be a tool call, so a normal
// answer streams as usual.
//
// The model call emits from one goroutine, so a cycleEmitter needs no
// lock; the run's events go straight to the request's emitter.
type cycleEmitter struct {
	r    *agentRun
	turn int
	tabs map[string]int // tool call id -> tab

	watch    bool // text tool calls are looked for
	hold     holdState
	held     []eventbus.Event
	heldText strings.Builder
	answered bool // the run's answered flag when the model call's attempt started
}

type holdState int

const (
	holdOff       holdState = iota // events pass
	holdWatching                   // no answer yet; hold it when it starts
	holdUndecided                  // holding an answer that may still become a tool call
	holdSuspect                    // holding an answer that looks like a tool call, to the end
)

func newCycleEmitter(r *agentRun, turn int, watch bool) *cycleEmitter {
	e := &cycleEmitter{r: r, turn: turn, tabs: map[string]int{}, watch: watch}
	e.reset()
	return e
}

// reset starts an attempt of the cycle's model call afresh: nothing held,
// no tool call placed.
func (e *cycleEmitter) reset() {
	e.hold, e.held = holdOff, nil
	if e.watch {
		e.hold = holdWatching
	}
	e.heldText.Reset()
	clear(e.tabs)
	e.answered = e.r.answered
}

// Emit implements eventbus.Emitter.
func (e *cycleEmitter) Emit(ev eventbus.Event) {
	if ev.Type == eventbus.TypeUsage {
		if u, ok := ev.Payload.(eventbus.Usage); ok {
			e.r.usage.PromptTokens += u.PromptTokens
			e.r.usage.CompletionTokens += u.CompletionTokens
			e.r.usage.ReasoningTokens += u.ReasoningTokens
		}
		return
	}
	if ev.Type == eventbus.TypeModelCallStarted {
		e.reset()
	}
	if mc, ok := ev.Payload.(eventbus.ModelCall); ok && ev.Type == eventbus.TypeModelCallFinished &&
		mc.Committed != nil && !*mc.Committed {
		// The attempt is withdrawn: what is held never shows, and the next
		// attempt's answer is separated as if this one never streamed.
		e.held = nil
		e.r.answered = e.answered
		e.pass(ev)
		return
	}
	if e.hold == holdWatching && ev.Type == eventbus.TypeAnswerStart {
		e.hold = holdUndecided
	}
	switch e.hold {
	case holdUndecided:
		e.held = append(e.held, ev)
		if ev.Type != eventbus.TypeAnswerDelta {
			return
		}
		e.heldText.WriteString(ev.Text)
		switch textCallVerdict(e.heldText.String()) {
		case verdictNo:
			e.release()
			e.hold = holdOff
		case verdictYes:
			e.hold = holdSuspect
		}
		return
	case holdSuspect:
		e.held = append(e.held, ev)
		if ev.Type == eventbus.TypeAnswerDelta {
			e.heldText.WriteString(ev.Text)
		}
		return
	}
	e.pass(ev)
}

// pass places ev and emits it.
func (e *cycleEmitter) pass(ev eventbus.Event) {
	p := eventbus.Placement{Turn: e.turn}
	switch ev.Type {
	case eventbus.TypeToolCallStart, eventbus.TypeToolCallDelta, eventbus.TypeToolCallEnd:
		if tc, ok := ev.Payload.(eventbus.ToolCall); ok {
			tab, seen := e.tabs[tc.ToolCallID]
			if !seen {
				tab = len(e.tabs) + 1
				e.tabs[tc.ToolCallID] = tab
			}
			p.Tab = tab
		}
	}
	ev.Placement = &p
	if ev.Type.IsText() && e.r.firstText == 0 {
		e.r.firstText = max(time.Since(e.r.start), time.Nanosecond)
	}
	e.r.out.Emit(ev)
	switch ev.Type {
	case eventbus.TypeAnswerStart:
		if e.r.answered { // text of an earlier cycle came before
			e.r.out.Emit(eventbus.Event{Type: eventbus.TypeAnswerDelta, Text: "\n\n", Placement: &p})
		}
	case eventbus.TypeAnswerDelta:
		e.r.answered = true
	}
}

// nativeCall is told that the model call made a tool call in the tool-call
// field: the answer held so far is no tool call written as text.
func (e *cycleEmitter) nativeCall() {
	e.release()
	e.hold = holdOff
}

// release emits what was held, in order.
func (e *cycleEmitter) release() {
	held := e.held
	e.held = nil
	for _, ev := range held {
		e.pass(ev)
	}
}

// finish ends the cycle's model call and returns its tool calls: the
// native ones, or, when the call made none and its answer was held as a
// possible text tool call, the calls extracted from that text (tried
// once). Extracted calls replace the held answer with tool_call events;
// otherwise whatever was held is released.
func (e *cycleEmitter) finish(turn *Turn, ok bool, offered []*schema.ToolInfo) []schema.ToolCall {
	if turn == nil {
		e.release()
		return nil
	}
	calls := turn.ToolCalls
	if !ok || e.hold != holdSuspect && e.hold != holdUndecided || len(calls) > 0 {
		e.release()
		return calls
	}
	names := make(map[string]bool, len(offered))
	for _, t := range offered {
		names[t.Name] = true
	}
	extracted := textToolCalls(e.heldText.String(), func(name string) bool { return names[name] })
	if len(extracted) == 0 {
		e.release()
		return nil
	}
	held := e.held
	e.held = nil
	var closing []eventbus.Event // the model call's end, after the calls it made
	for _, ev := range held {
		switch ev.Type {
		case eventbus.TypeAnswerStart, eventbus.TypeAnswerDelta, eventbus.TypeAnswerEnd:
			continue // the text was the tool call
		case eventbus.TypeModelCallFinished:
			closing = append(closing, ev)
			continue
		}
		e.pass(ev)
	}
	defer func() {
		for _, ev := range closing {
			e.pass(ev)
		}
	}()
	for i := range extracted {
		c := &extracted[i]
		c.ID = e.r.idPrefix(e.turn) + "text_" + strconv.Itoa(i+1)
		e.pass(eventbus.Of(eventbus.TypeToolCallStart, eventbus.ToolCall{ToolCallID: c.ID, Name: c.Function.Name}))
		e.pass(eventbus.Of(eventbus.TypeToolCallDelta, eventbus.ToolCall{ToolCallID: c.ID, Arguments: c.Function.Arguments}))
		e.pass(eventbus.Of(eventbus.TypeToolCallEnd,
			eventbus.ToolCall{ToolCallID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments}))
	}
	turn.Answer = ""
	return extracted
}
