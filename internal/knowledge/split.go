package knowledge

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/chatpipe/chatpipe/internal/tokens"
)

// This file cuts text that is too long for one chunk, at the coarsest
// boundary that makes the parts fit.

// proseBoundaries are tried in order; runes are the last resort.
var proseBoundaries = []func(text string) []int{sentenceEnds, lineEnds, clauseEnds, spaceStarts}

// splitProse cuts text into pieces of at most budget tokens. The first
// piece carries sep; the others carry the text that separated them.
func splitProse(text string, budget int, sep string) []piece {
	if budget < 1 {
		return nil
	}
	var out []piece
	splitLevel(text, budget, 0, sep, &out)
	return out
}

func splitLevel(text string, budget, level int, sep string, out *[]piece) {
	if tokens.Estimate(text) <= budget {
		*out = append(*out, newPiece(text, sep, false))
		return
	}
	if level == len(proseBoundaries) {
		for i, part := range splitRunes(text, budget) {
			if i > 0 {
				sep = ""
			}
			*out = append(*out, newPiece(part, sep, false))
		}
		return
	}
	for i, seg := range segments(text, proseBoundaries[level](text)) {
		if i > 0 {
			sep = seg.sep
		}
		splitLevel(seg.text, budget, level+1, sep, out)
	}
}

type segment struct{ text, sep string }

// segments cuts text at the given offsets. Whitespace around a cut moves
// into the separator of the segment after it; whitespace-only segments
// vanish into the next separator.
func segments(text string, cuts []int) []segment {
	var out []segment
	pending := "" // whitespace carried to the next segment's separator
	start := 0
	for _, end := range append(cuts, len(text)) {
		if end <= start {
			continue
		}
		raw := text[start:end]
		start = end
		body := strings.TrimRightFunc(raw, unicode.IsSpace)
		trail := raw[len(body):]
		if len(out) > 0 || pending != "" {
			trimmed := strings.TrimLeftFunc(body, unicode.IsSpace)
			pending += body[:len(body)-len(trimmed)]
			body = trimmed
		}
		if body == "" {
			pending += trail
			continue
		}
		out = append(out, segment{text: body, sep: pending})
		pending = trail
	}
	return out
}

// sentenceEnds returns the offsets just after each sentence: after . ! ?
// followed by a space or the end, or after a CJK 。！？； — in both cases
// including closing quotes and brackets.
func sentenceEnds(text string) []int {
	var cuts []int
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		latin := r == '.' || r == '!' || r == '?'
		if !latin && !strings.ContainsRune("。！？；", r) {
			continue
		}
		for i < len(text) {
			c, s := utf8.DecodeRuneInString(text[i:])
			if !strings.ContainsRune(`"')]”’」』）】`, c) && !(c == r) {
				break
			}
			i += s
		}
		if latin && i < len(text) {
			if next, _ := utf8.DecodeRuneInString(text[i:]); !unicode.IsSpace(next) {
				continue
			}
		}
		cuts = append(cuts, i)
	}
	return cuts
}

// lineEnds returns the offset after every line break.
func lineEnds(text string) []int {
	var cuts []int
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			cuts = append(cuts, i+1)
		}
	}
	return cuts
}

// clauseEnds returns the offsets after clause marks: CJK ，、：; ASCII
// , ; : only before a space (so 3,000 and http:// stay whole).
func clauseEnds(text string) []int {
	var cuts []int
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case strings.ContainsRune("，、：", r):
			cuts = append(cuts, i)
		case r == ',' || r == ';' || r == ':':
			if i < len(text) && (text[i] == ' ' || text[i] == '\t') {
				cuts = append(cuts, i)
			}
		}
	}
	return cuts
}

// spaceStarts returns the offset where each run of whitespace starts.
func spaceStarts(text string) []int {
	var cuts []int
	inSpace := false
	for i, r := range text {
		sp := unicode.IsSpace(r)
		if sp && !inSpace && i > 0 {
			cuts = append(cuts, i)
		}
		inSpace = sp
	}
	return cuts
}

// splitRunes cuts text into parts of at most budget tokens between
// runes. It fills parts from the end, so the last part is a full one (an
// overlap taken from it is as long as allowed) and the first holds what
// is left over (it may still fit in the chunk being filled).
func splitRunes(text string, budget int) []string {
	var parts []string
	end := len(text)
	var z size
	for i := len(text); i > 0; {
		r, n := utf8.DecodeLastRuneInString(text[:i])
		next := z
		if r < utf8.RuneSelf {
			next.ascii++
		} else {
			next.other++
		}
		if next.tokens() > budget && i < end {
			parts = append(parts, text[i:end])
			end, next = i, size{}
			if r < utf8.RuneSelf {
				next.ascii++
			} else {
				next.other++
			}
		}
		z = next
		i -= n
	}
	if end > 0 {
		parts = append(parts, text[:end])
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return parts
}

// splitCode cuts a code fence between lines into fences that each fit in
// target tokens (a line longer than that is cut between runes). When even
// the fence lines leave no room, the code is cut as prose.
func splitCode(b block, target int) []piece {
	open, lines := b.open, b.lines[1:]
	closing := b.close
	if closing != "" {
		lines = lines[:len(lines)-1]
	} else {
		closing = fenceRun(open)
	}
	budget := target - tokens.Estimate(open+"\n") - tokens.Estimate("\n"+closing)
	if budget < 1 {
		out := splitProse(b.text(), target, blockSep)
		for i := range out {
			out[i].code = true
		}
		return out
	}
	var out []piece
	var group []string
	used := 0
	emit := func() {
		if len(group) > 0 {
			text := open + "\n" + strings.Join(group, "\n") + "\n" + closing
			out = append(out, newPiece(text, blockSep, true))
			group, used = nil, 0
		}
	}
	for _, line := range lines {
		parts := []string{line}
		if tokens.Estimate(line) > budget {
			parts = splitRunes(line, budget)
		}
		for _, p := range parts {
			c := tokens.Estimate(p)
			if len(group) > 0 {
				c += tokens.Estimate("\n")
			}
			if used+c > budget {
				emit()
				c = tokens.Estimate(p)
			}
			group = append(group, p)
			used += c
		}
	}
	emit()
	return out
}

// fenceRun returns the marker run that opens a fence line ("```" of
// "```go").
func fenceRun(open string) string {
	s := strings.TrimLeft(open, " ")
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	return s[:n]
}
