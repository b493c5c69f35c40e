// Package think separates a model's reasoning from its answer and turns
// both into balanced thinking / answer event blocks.
//
// Splitter handles reasoning written inline in the content as
// <think>…</think> (DeepSeek-R1, Qwen3 and others served as plain text),
// with tags split across chunks at any byte. Blocks turns the separated
// text — and reasoning that providers send in a field of their own — into
// thinking.* and answer.* events, optionally wrapping thinking in tags, and
// closes whatever is open on every ending.
package think

import "strings"

const (
	openTag  = "<think>"
	closeTag = "</think>"
)

// Sink receives the text a Splitter separates, in stream order.
type Sink interface {
	Thinking(text string)
	Answer(text string)
}

// Splitter separates inline <think> blocks from answer text. An opening
// tag counts only before the answer has any non-whitespace text, so an
// answer that talks about <think> tags is left alone. Every byte that is
// not a recognised tag reaches the sink exactly once, in order.
type Splitter struct {
	inThink    bool
	answerSeen bool   // non-whitespace answer text was emitted
	pending    string // held-back bytes that may begin a tag
}

// Write feeds one content chunk.
func (s *Splitter) Write(chunk string, sink Sink) {
	buf := chunk
	if s.pending != "" {
		buf = s.pending + chunk
		s.pending = ""
	}
	for buf != "" {
		switch {
		case s.answerSeen:
			sink.Answer(buf)
			return
		case s.inThink:
			k := strings.Index(buf, closeTag)
			if k < 0 {
				keep := partialSuffix(buf, closeTag)
				if k := len(buf) - keep; k > 0 {
					sink.Thinking(buf[:k])
				}
				s.pending = buf[len(buf)-keep:]
				return
			}
			if k > 0 {
				sink.Thinking(buf[:k])
			}
			s.inThink = false
			buf = buf[k+len(closeTag):]
		default: // outside, no answer text yet: whitespace, then maybe <think>
			j := 0
			for j < len(buf) && isSpace(buf[j]) {
				j++
			}
			if j > 0 {
				sink.Answer(buf[:j])
				buf = buf[j:]
				continue
			}
			if strings.HasPrefix(buf, openTag) {
				s.inThink = true
				buf = buf[len(openTag):]
				continue
			}
			if len(buf) < len(openTag) && strings.HasPrefix(openTag, buf) {
				s.pending = buf
				return
			}
			s.answerSeen = true
		}
	}
}

// Flush emits any held-back bytes as the text they turned out to be; call
// it when the content stream ends.
func (s *Splitter) Flush(sink Sink) {
	if s.pending == "" {
		return
	}
	p := s.pending
	s.pending = ""
	if s.inThink {
		sink.Thinking(p)
		return
	}
	s.answerSeen = true
	sink.Answer(p)
}

// InThink reports whether the stream is inside an unclosed <think> block.
func (s *Splitter) InThink() bool { return s.inThink }

// partialSuffix returns the length of the longest proper prefix of tag that
// buf ends with.
func partialSuffix(buf, tag string) int {
	n := min(len(buf), len(tag)-1)
	for ; n > 0; n-- {
		if strings.HasSuffix(buf, tag[:n]) {
			return n
		}
	}
	return 0
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\r' || b == '\t' }
