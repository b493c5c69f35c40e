package plugins

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// matcher finds listed words and regular expressions in text, ignoring
// case. Words go through one Aho–Corasick automaton over the UTF-8 of each
// case-folded rune, so a thousand words cost what one does and CJK words
// work like any other; its state says how much of the text's end may still
// begin a word, which is what a scanner holds back. A matcher is immutable
// and shared by every request of a configuration.
type matcher struct {
	root  [256]int32 // transitions out of the root, for every byte
	nodes []acNode
	edges []acEdge // each node's edges, contiguous and sorted by byte

	patterns []*regexp.Regexp // case-insensitive, leftmost-longest
	blocking []bool           // per pattern: blocks (refuse / stop) rather than masks
	// extend matches, at the end of a text, the longest suffix that a
	// pattern match could still grow from; nil without patterns.
	extend  *regexp.Regexp
	maxHold int // runes a pattern may hold back
}

type acNode struct {
	first, n int32 // edges[first : first+n]
	fail     int32
	// hold is the runes of text ending here that must be held back: the
	// longest suffix that can still grow into a word (this node's path if
	// it has edges, else its failure link's hold). A complete word that
	// cannot grow is masked and released at once.
	hold  int32
	mask  int32 // runes of the longest masked word ending here (0: none), failure links included
	block int32 // runes of the longest blocking word ending here
}

type acEdge struct {
	b  byte
	to int32
}

// span is a byte range [start, end) of text to mask.
type span struct{ start, end int }

// fold maps every rune of a case orbit (k, K, the Kelvin sign) to one
// rune, the smallest, so folded text has as many runes as the original.
func fold(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// newMatcher builds a matcher for words (masked or blocking) and compiled
// patterns with their extension expression.
func newMatcher(masked, blocking []string, patterns []compiledPattern, maxHold int) *matcher {
	type buildNode struct {
		next        map[byte]int32
		runes       int32 // runes from the root, on nodes that end a rune
		mask, block int32
		fail        int32
	}
	trie := []buildNode{{next: map[byte]int32{}}}
	add := func(word string, isBlock bool) {
		s, runes := int32(0), int32(0)
		var buf [utf8.UTFMax]byte
		for _, r := range word {
			runes++
			n := utf8.EncodeRune(buf[:], fold(r))
			for _, b := range buf[:n] {
				to, ok := trie[s].next[b]
				if !ok {
					to = int32(len(trie))
					trie = append(trie, buildNode{next: map[byte]int32{}})
					trie[s].next[b] = to
				}
				s = to
			}
			trie[s].runes = runes
		}
		if s == 0 {
			return
		}
		if isBlock {
			trie[s].block = max(trie[s].block, runes)
		} else {
			trie[s].mask = max(trie[s].mask, runes)
		}
	}
	for _, w := range masked {
		add(w, false)
	}
	for _, w := range blocking {
		add(w, true)
	}

	// Failure links, breadth first: a node's link is the longest proper
	// suffix of its path that is a path too; outputs inherit along it.
	m := &matcher{nodes: make([]acNode, len(trie)), maxHold: maxHold}
	queue := make([]int32, 0, len(trie))
	for b, to := range trie[0].next {
		m.root[b] = to
		queue = append(queue, to)
	}
	var order []int32 // breadth first: a failure link comes before its node
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		order = append(order, s)
		for b, to := range trie[s].next {
			f := trie[s].fail
			for f != 0 {
				if t, ok := trie[f].next[b]; ok {
					f = t
					break
				}
				f = trie[f].fail
			}
			if f == 0 {
				f = m.root[b]
			}
			trie[to].fail = f
			trie[to].mask = max(trie[to].mask, trie[f].mask)
			trie[to].block = max(trie[to].block, trie[f].block)
			queue = append(queue, to)
		}
	}
	holds := make([]int32, len(trie))
	for _, s := range order {
		if len(trie[s].next) > 0 {
			holds[s] = trie[s].runes
		} else {
			holds[s] = holds[trie[s].fail]
		}
	}
	for i, bn := range trie {
		nd := &m.nodes[i]
		nd.fail, nd.mask, nd.block, nd.hold = bn.fail, bn.mask, bn.block, holds[i]
		nd.first, nd.n = int32(len(m.edges)), int32(len(bn.next))
		for b := range 256 {
			if to, ok := bn.next[byte(b)]; ok {
				m.edges = append(m.edges, acEdge{byte(b), to})
			}
		}
	}

	var extend []string
	for _, p := range patterns {
		m.patterns = append(m.patterns, p.re)
		m.blocking = append(m.blocking, p.blocking)
		extend = append(extend, p.extend)
	}
	if len(extend) > 0 {
		m.extend = regexp.MustCompile(`(?:` + strings.Join(extend, "|") + `)\z`)
	}
	return m
}

// step moves the automaton from state s over byte b.
func (m *matcher) step(s int32, b byte) int32 {
	for s != 0 {
		nd := &m.nodes[s]
		for _, e := range m.edges[nd.first : nd.first+nd.n] {
			if e.b == b {
				return e.to
			}
		}
		s = nd.fail
	}
	return m.root[b]
}

// empty reports whether the matcher finds nothing at all.
func (m *matcher) empty() bool { return len(m.nodes) == 1 && len(m.patterns) == 0 }

// runeStart walks back n runes from end.
func runeStart(text string, end int, n int32) int {
	for ; n > 0 && end > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(text[:end])
		end -= size
	}
	return end
}

// scanner filters one stream of text (a request's answer, or its
// thinking) delta by delta. It holds back only the end of the text that
// may still begin a match — for words, the automaton's depth — and
// releases it once it cannot, when the block ends, or at the end.
type scanner struct {
	m     *matcher
	state int32
	held  string // received but not released: it may begin a match
	masks []span // what to mask in held
	prev  string // the last released rune: context for \b in patterns
}

// write adds text and returns what may be released now, masked. With
// blocked set, a blocking match was found: out is the text before it and
// the scanner is done.
func (s *scanner) write(text string) (out string, blocked bool) {
	return s.scan(text, false)
}

// flush releases everything held, as the end of the text.
func (s *scanner) flush() (out string, blocked bool) {
	if s.held == "" {
		return "", false
	}
	return s.scan("", true)
}

func (s *scanner) scan(text string, final bool) (string, bool) {
	m := s.m
	work, from := text, 0
	if s.held != "" {
		work, from = s.held+text, len(s.held)
	}
	masks := s.masks
	state := s.state
	stopAt := -1
	var buf [utf8.UTFMax]byte
	for i := from; i < len(work); {
		if c := work[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			state = m.step(state, c)
			i++
		} else {
			r, size := utf8.DecodeRuneInString(work[i:])
			n := utf8.EncodeRune(buf[:], fold(r))
			for _, b := range buf[:n] {
				state = m.step(state, b)
			}
			i += size
		}
		if nd := &m.nodes[state]; nd.mask|nd.block != 0 {
			if nd.block != 0 {
				stopAt = runeStart(work, i, nd.block)
				break
			}
			masks = append(masks, span{runeStart(work, i, nd.mask), i})
		}
	}
	cut := len(work)
	if !final {
		cut = runeStart(work, len(work), m.nodes[state].hold)
	}
	if m.patterns != nil {
		var at int
		at, cut, masks = s.scanPatterns(work, cut, masks, final)
		if at >= 0 && (stopAt < 0 || at < stopAt) {
			stopAt = at
		}
	}
	if stopAt >= 0 {
		out := render(work[:stopAt], masks)
		*s = scanner{m: m}
		return out, true
	}
	out := render(work[:cut], masks)
	if cut > 0 && m.patterns != nil {
		_, size := utf8.DecodeLastRuneInString(work[:cut])
		s.prev = work[cut-size : cut]
	}
	s.held, s.state = work[cut:], state
	if final {
		s.held, s.state, s.prev = "", 0, ""
	}
	s.masks = s.masks[:0]
	for _, sp := range masks {
		if sp.end > cut {
			s.masks = append(s.masks, span{max(sp.start, cut) - cut, sp.end - cut})
		}
	}
	return out, false
}

// scanPatterns finds the patterns in work (with the last released rune as
// context, so \b sees what came before), adding masks and returning the
// start of the first blocking match (-1: none) and the cut moved back to
// hold what a pattern match could still grow from. A match that ends at
// the end of the text so far is only confirmed by the next write (what
// follows can undo a \b or grow a repeat), or by the final flush. A
// pattern never holds back more than max_hold runes; the words always
// keep what they need (wordCut).
func (s *scanner) scanPatterns(work string, wordCut int, masks []span, final bool) (int, int, []span) {
	m := s.m
	full, off := s.prev+work, len(s.prev)
	floor := min(runeStart(work, len(work), int32(m.maxHold)), wordCut)
	cut, stopAt := wordCut, -1
	hold := func(at int) { cut = min(cut, max(at, floor)) }
	for k, re := range m.patterns {
		for _, loc := range re.FindAllStringIndex(full, -1) {
			a, b := loc[0]-off, loc[1]-off
			switch {
			case a < 0 || a == b:
				// Starts in text already released, or empty: nothing to do.
			case b == len(work) && !final:
				hold(a)
			case m.blocking[k]:
				if stopAt < 0 || a < stopAt {
					stopAt = a
				}
			default:
				masks = append(masks, span{a, b})
			}
		}
	}
	if !final {
		if loc := m.extend.FindStringIndex(full); loc != nil {
			hold(max(loc[0]-off, 0))
		}
	}
	return stopAt, cut, masks
}

// render returns text with the runes inside masks replaced by '*', one
// star per rune, so masked text keeps its length in characters.
func render(text string, masks []span) string {
	hit := false
	for _, sp := range masks {
		if sp.start < len(text) {
			hit = true
			break
		}
	}
	if !hit {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); {
		_, size := utf8.DecodeRuneInString(text[i:])
		masked := false
		for _, sp := range masks {
			if sp.start <= i && i < sp.end {
				masked = true
				break
			}
		}
		if masked {
			b.WriteByte('*')
		} else {
			b.WriteString(text[i : i+size])
		}
		i += size
	}
	return b.String()
}
