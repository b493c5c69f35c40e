package think

import "strings"

// Untag takes chatpipe's own think tags off a stream's thinking deltas.
// Tags are a wire format (think_tags): a client concatenating deltas sees
// "<think>…</think>answer". What is saved, and what a non-streaming
// answer returns, is the clean thinking text. Feed it, in stream order,
// every thinking.start (Start) and thinking.delta (Delta).
type Untag struct {
	first  bool // the next delta is its block's first
	tagged bool // the open block began with <think>
}

// Start marks the beginning of a thinking block.
func (u *Untag) Start() { u.first, u.tagged = true, false }

// Delta returns text without the tags the block was wrapped in: the
// "<think>" the first delta starts with, and a closing "</think>" delta
// (as Blocks and the run's guard send it).
func (u *Untag) Delta(text string) string {
	if u.first {
		u.first = false
		if strings.HasPrefix(text, openTag) {
			u.tagged = true
			return text[len(openTag):]
		}
	}
	if u.tagged && text == closeTag {
		u.tagged = false
		return ""
	}
	return text
}

// StripSaved cleans thinking saved before tags were taken off at save
// time ("<think>a</think><think>b</think>"): chatpipe saved the wire text,
// each block wrapped. Text that does not begin with the tag is returned
// as is, so a model's own mention of the tag in clean text survives.
func StripSaved(s string) string {
	if !strings.HasPrefix(s, openTag) {
		return s
	}
	return strings.NewReplacer(openTag, "", closeTag, "").Replace(s)
}
