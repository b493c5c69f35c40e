package citation

import (
	"strconv"
	"strings"
)

// Bounds of what counts as a citation marker. A marker is "[n]" or a list
// "[n, m, …]" (commas, optionally followed by spaces); one with a number
// longer than maxDigits or longer than maxMarker bytes in all is ordinary
// text. maxMarker also bounds what a Filter ever holds back.
const (
	maxDigits = 6
	maxMarker = 48
)

// Filter removes citation markers that point at no passage from streamed
// answer text: "[n]" with n outside 1..max is dropped, a list keeps only
// its valid numbers, and everything else passes unchanged and in order.
// A marker can be split across writes, so the Filter holds back the
// shortest suffix of a write that could still become one ("[", "[1",
// "[12, ") and releases it as soon as it cannot. Text without '[' goes
// straight through without allocating.
//
// The text that reaches out is what the client sees and what is saved, so
// the two are equal by construction. A Filter is not safe for concurrent use.
type Filter struct {
	max     int
	out     func(string)
	pending [maxMarker]byte
	held    int // bytes of pending in use
}

// NewFilter returns a Filter for an answer citing passages 1..max that
// passes what it lets through to out (never with an empty string).
func NewFilter(max int, out func(string)) *Filter {
	return &Filter{max: max, out: out}
}

// Write filters the next piece of the answer.
func (f *Filter) Write(s string) {
	if f.held > 0 {
		var done bool
		if s, done = f.resume(s); done {
			return
		}
	}
	start := 0 // s[start:] has not been passed on yet
	for i := 0; i < len(s); {
		k := strings.IndexByte(s[i:], '[')
		if k < 0 {
			break
		}
		at := i + k
		size, v := scan(s[at:], f.max)
		switch v {
		case partial:
			f.emit(s[start:at])
			f.held = copy(f.pending[:], s[at:])
			return
		case keep:
			i = at + size
		case notMarker:
			i = at + 1
		case drop, rewrite:
			f.emit(s[start:at])
			if v == rewrite {
				f.out(validOnly(s[at:at+size], f.max))
			}
			start = at + size
			i = start
		}
	}
	f.emit(s[start:])
}

// resume continues a held-back marker with s. It reports done when all of
// s was taken into the still-incomplete marker; otherwise it returns the
// part of s left to filter.
func (f *Filter) resume(s string) (string, bool) {
	n := copy(f.pending[f.held:], s)
	buf := f.pending[:f.held+n]
	size, v := scan(buf, f.max)
	if v == partial {
		if n == len(s) {
			f.held += n
			return "", true
		}
		v = notMarker // cannot happen while maxMarker bounds scan; kept as a safe default
	}
	held := f.held
	f.held = 0
	switch v {
	case keep:
		f.out(string(buf[:size]))
	case rewrite:
		f.out(validOnly(buf[:size], f.max))
	case drop:
	default: // not a marker: release the held bytes, filter s from its start
		f.out(string(buf[:held]))
		return s, false
	}
	return s[size-held:], false
}

// Flush releases a held-back partial marker as the text it turned out to
// be; call it when the answer ends.
func (f *Filter) Flush() {
	if f.held > 0 {
		f.out(string(f.pending[:f.held]))
		f.held = 0
	}
}

func (f *Filter) emit(s string) {
	if s != "" {
		f.out(s)
	}
}

type verdict int

const (
	notMarker verdict = iota // ordinary text
	partial                  // the input ends inside what may still be a marker
	keep                     // a marker whose numbers all exist
	drop                     // a marker whose numbers all point nowhere
	rewrite                  // a list with some valid and some invalid numbers
)

// scan classifies the text starting at b[0] == '[' and returns the
// marker's length for keep, drop and rewrite.
func scan[T string | []byte](b T, max int) (int, verdict) {
	valid, invalid := 0, 0
	i := 1
	for {
		start, num := i, 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if i-start == maxDigits {
				return 0, notMarker
			}
			num = num*10 + int(b[i]-'0')
			i++
		}
		if i == len(b) {
			return 0, unfinished(i)
		}
		if i == start {
			return 0, notMarker
		}
		if num >= 1 && num <= max {
			valid++
		} else {
			invalid++
		}
		switch b[i] {
		case ']':
			i++
			switch {
			case i > maxMarker:
				return 0, notMarker
			case invalid == 0:
				return i, keep
			case valid == 0:
				return i, drop
			default:
				return i, rewrite
			}
		case ',':
			i++
			for i < len(b) && b[i] == ' ' && i < maxMarker {
				i++
			}
			if i == len(b) {
				return 0, unfinished(i)
			}
			if i >= maxMarker {
				return 0, notMarker
			}
		default:
			return 0, notMarker
		}
	}
}

// unfinished is the verdict for input that ended after n bytes of a
// possible marker: it may still complete if there is room left.
func unfinished(n int) verdict {
	if n < maxMarker {
		return partial
	}
	return notMarker
}

// validOnly rewrites the list marker m keeping only numbers in 1..max,
// e.g. "[1, 7, 2]" with max 3 becomes "[1, 2]".
func validOnly[T string | []byte](m T, max int) string {
	var b strings.Builder
	b.WriteByte('[')
	for part := range strings.SplitSeq(string(m[1:len(m)-1]), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > max {
			continue
		}
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		b.WriteString(strings.TrimSpace(part))
	}
	b.WriteByte(']')
	return b.String()
}
