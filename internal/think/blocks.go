package think

import (
	"strings"

	"github.com/chatpipe/chatpipe/eventbus"
)

// Blocks turns thinking and answer text into start/delta/end event blocks.
// With Tags on, a thinking block's deltas read "<think>…</think>", so a
// client that concatenates every thinking and answer delta in order sees
// "<think>…</think>answer". Close ends whatever is open, so every ending —
// answer, error, stop, a provider that never closes its thinking — leaves
// the blocks balanced.
//
// Leading whitespace of a block is dropped (models open with "\n\n"), and
// a thinking block of whitespace only is never opened.
type Blocks struct {
	Emitter eventbus.Emitter
	Tags    bool

	thinkOpen  bool
	answerOpen bool
	sawThink   bool
	sawAnswer  bool
}

// Thinking adds reasoning text, opening a thinking block if needed (and
// ending an open answer block: reasoning that resumes after answer text
// starts a new block).
func (b *Blocks) Thinking(text string) {
	if !b.thinkOpen {
		text = strings.TrimLeft(text, " \t\r\n")
		if text == "" {
			return
		}
		b.endAnswer()
		b.thinkOpen, b.sawThink = true, true
		b.Emitter.Emit(eventbus.Event{Type: eventbus.TypeThinkingStart})
		if b.Tags {
			text = openTag + text
		}
	}
	b.Emitter.Emit(eventbus.Delta(eventbus.TypeThinkingDelta, text))
}

// Answer adds answer text, closing an open thinking block first.
func (b *Blocks) Answer(text string) {
	if !b.answerOpen {
		text = strings.TrimLeft(text, " \t\r\n")
		if text == "" {
			return
		}
		b.endThinking()
		b.answerOpen, b.sawAnswer = true, true
		b.Emitter.Emit(eventbus.Event{Type: eventbus.TypeAnswerStart})
	}
	b.Emitter.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, text))
}

// Close ends any open block.
func (b *Blocks) Close() {
	b.endThinking()
	b.endAnswer()
}

// ThinkingOpen reports whether a thinking block is open.
func (b *Blocks) ThinkingOpen() bool { return b.thinkOpen }

// AnswerStarted reports whether any answer text was emitted.
func (b *Blocks) AnswerStarted() bool { return b.sawAnswer }

// Started reports whether any thinking or answer text was emitted.
func (b *Blocks) Started() bool { return b.sawThink || b.sawAnswer }

func (b *Blocks) endThinking() {
	if !b.thinkOpen {
		return
	}
	b.thinkOpen = false
	if b.Tags {
		b.Emitter.Emit(eventbus.Delta(eventbus.TypeThinkingDelta, closeTag))
	}
	b.Emitter.Emit(eventbus.Event{Type: eventbus.TypeThinkingEnd})
}

func (b *Blocks) endAnswer() {
	if !b.answerOpen {
		return
	}
	b.answerOpen = false
	b.Emitter.Emit(eventbus.Event{Type: eventbus.TypeAnswerEnd})
}

var _ Sink = (*Blocks)(nil)
