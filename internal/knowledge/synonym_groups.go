package knowledge

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/chatpipe/chatpipe/internal/knowledge/synonyms"
)

// SynonymGroups are groups of words that questions and documents use for
// one another ("delete, remove, erase"; "删除, 删掉, 移除"): a question
// holding one word of a group has the group's other words searched too,
// as a keyword query of their own counted below the question's words
// (Search.SynonymWeight). Built from synonyms.Builtin and an operator's
// file (synonyms.ParseGroups).
type SynonymGroups struct {
	groups [][]synonymEntry
	// byTerm indexes the entries of spaced scripts by their first term;
	// byWord those of unspaced scripts (Chinese) by their text.
	byTerm map[string][]entryRef
	byWord map[string][]entryRef
	// maxRunes is the longest unspaced entry, in characters.
	maxRunes int
}

type synonymEntry struct {
	word     string
	terms    []string // WordQueryTerms(word): what the entry adds
	phrase   []string // Terms(word), function words included: what a question must say, in order
	unspaced bool     // Chinese (or another unspaced script): matched as written
}

// MaxSynonymRunes bounds an entry of a script written without spaces:
// every substring of a question up to the longest entry is looked up.
const MaxSynonymRunes = 16

type entryRef struct{ group, entry int }

// NewSynonymGroups compiles groups (as synonyms.ParseGroups returns
// them). An entry is either words of spaced scripts, which match a
// question holding all of their stems, or a word of two or more
// characters of an unspaced script such as Chinese, which matches where
// the question writes it; an entry mixing both, a single Chinese
// character, or an entry of function words alone is refused.
func NewSynonymGroups(groups []synonyms.Group) (*SynonymGroups, error) {
	g := &SynonymGroups{byTerm: map[string][]entryRef{}, byWord: map[string][]entryRef{}}
	for gi, group := range groups {
		entries := make([]synonymEntry, 0, len(group.Words))
		for ei, w := range group.Words {
			e := synonymEntry{word: w, terms: WordQueryTerms(w), phrase: Terms(w)}
			unspaced, long := 0, 0
			for _, r := range w {
				if UnspacedScript(r) {
					unspaced++
				}
			}
			for _, t := range e.phrase {
				long = max(long, utf8.RuneCountInString(t))
			}
			switch n := utf8.RuneCountInString(w); {
			case unspaced > 0 && unspaced < n:
				return nil, fmt.Errorf("line %d: %q mixes a script written without spaces (Chinese, Japanese, Korean, Thai …) with spaces or other characters; write them as separate words", group.Line, w)
			case unspaced == 1:
				return nil, fmt.Errorf("line %d: %q is a single character: too ambiguous for a synonym", group.Line, w)
			case unspaced > MaxSynonymRunes:
				return nil, fmt.Errorf("line %d: %q has %d characters; a word of a script written without spaces may have at most %d", group.Line, w, unspaced, MaxSynonymRunes)
			case unspaced > 0:
				e.unspaced = true
				g.byWord[w] = append(g.byWord[w], entryRef{gi, ei})
				g.maxRunes = max(g.maxRunes, n)
			case len(e.phrase) == 0:
				return nil, fmt.Errorf("line %d: %q has no letters or digits to search for", group.Line, w)
			case long < 2:
				return nil, fmt.Errorf("line %d: %q is searched as %q, too short to relate (symbols are not searched)", group.Line, w, strings.Join(e.phrase, " "))
			case isStopTerm(e.terms[0]):
				// WordQueryTerms keeps function words only when there is
				// nothing else
				return nil, fmt.Errorf("line %d: %q has only function words (the, of, up …), which search leaves out", group.Line, w)
			default:
				g.byTerm[e.phrase[0]] = append(g.byTerm[e.phrase[0]], entryRef{gi, ei})
			}
			entries = append(entries, e)
		}
		g.groups = append(g.groups, entries)
	}
	return g, nil
}

// terms returns the terms of the other entries of the groups whose
// entries query holds — a phrase where the question says its words in
// order (in any inflection), a Chinese word where it is written — leaving
// out own (the query's terms), each once, in the order the query's words
// come; at most maxQueryTerms.
func (g *SynonymGroups) terms(query string, own []string) []string {
	if g == nil {
		return nil
	}
	var matched []entryRef
	if len(g.byTerm) > 0 {
		words := Terms(query)
		for i, t := range words {
			for _, ref := range g.byTerm[t] {
				if e := g.groups[ref.group][ref.entry]; hasPrefix(words[i:], e.phrase) {
					matched = append(matched, ref)
				}
			}
		}
	}
	if len(g.byWord) > 0 {
		for _, w := range unspacedWords(query, g.maxRunes) {
			matched = append(matched, g.byWord[w]...)
		}
	}
	seen := make(map[string]bool, len(own))
	for _, t := range own {
		seen[t] = true
	}
	var out []string
	for _, ref := range matched {
		for ei, e := range g.groups[ref.group] {
			if ei == ref.entry {
				continue
			}
			for _, t := range e.terms {
				if !seen[t] && len(out) < maxQueryTerms {
					seen[t] = true
					out = append(out, t)
				}
			}
		}
	}
	return out
}

func hasPrefix(words, phrase []string) bool {
	return len(words) >= len(phrase) && slices.Equal(words[:len(phrase)], phrase)
}

// unspacedWords returns the substrings of two to maxRunes characters of
// the runs of unspaced script in s (lower-cased), in order of their
// start, longer first; and, after them, the verbs that a Chinese
// potential complement splits, joined again: 删不掉 and 删得掉 hold 删掉,
// 找不到 holds 找到, 打不开 holds 打开.
func unspacedWords(s string, maxRunes int) []string {
	s = strings.ToLower(s)
	words := scriptWords(s, UnspacedScript, maxRunes)
	runes := []rune(s)
	for i := 1; i+1 < len(runes); i++ {
		if (runes[i] == '不' || runes[i] == '得') && isHan(runes[i-1]) && isHan(runes[i+1]) {
			words = append(words, string([]rune{runes[i-1], runes[i+1]}))
		}
	}
	return words
}
