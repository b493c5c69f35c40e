package knowledge

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chatpipe/chatpipe/internal/knowledge/synonyms"
)

// SynonymGroups are groups of words that questions and documents use for
// one another ("delete, remove, erase"; "删除, 删掉, 移除"): a question
// holding one word of a group has the group's other words added to its
// expansion (ExpansionTerms), counted below its own words. Built from
// synonyms.Builtin and an operator's file (synonyms.ParseGroups).
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
	unspaced bool     // Chinese (or another unspaced script): matched as written
}

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
			e := synonymEntry{word: w, terms: WordQueryTerms(w)}
			unspaced := 0
			for _, r := range w {
				if isUnspacedScript(r) {
					unspaced++
				}
			}
			switch n := utf8.RuneCountInString(w); {
			case unspaced > 0 && unspaced < n:
				return nil, fmt.Errorf("line %d: %q mixes Chinese (or another script written without spaces) with other characters; write them as two words", group.Line, w)
			case unspaced == 1:
				return nil, fmt.Errorf("line %d: %q is a single character: too ambiguous for a synonym", group.Line, w)
			case unspaced > 0:
				e.unspaced = true
				g.byWord[w] = append(g.byWord[w], entryRef{gi, ei})
				g.maxRunes = max(g.maxRunes, n)
			case len(e.terms) == 0 || isStopTerm(e.terms[0]):
				// WordQueryTerms keeps function words only when there is
				// nothing else
				return nil, fmt.Errorf("line %d: %q has only function words (the, of, up …), which search leaves out", group.Line, w)
			default:
				g.byTerm[e.terms[0]] = append(g.byTerm[e.terms[0]], entryRef{gi, ei})
			}
			entries = append(entries, e)
		}
		g.groups = append(g.groups, entries)
	}
	return g, nil
}

// terms returns the terms of the other entries of the groups whose
// entries query holds, leaving out own (the query's terms), each once, in
// the order the query's words come; at most maxQueryTerms.
func (g *SynonymGroups) terms(query string, own []string) []string {
	if g == nil {
		return nil
	}
	have := make(map[string]bool, len(own))
	for _, t := range own {
		have[t] = true
	}
	var matched []entryRef
	for _, t := range own {
		for _, ref := range g.byTerm[t] {
			if e := g.groups[ref.group][ref.entry]; allIn(e.terms, have) {
				matched = append(matched, ref)
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

func allIn(terms []string, set map[string]bool) bool {
	for _, t := range terms {
		if !set[t] {
			return false
		}
	}
	return true
}

// unspacedWords returns the substrings of two to maxRunes characters of
// the runs of unspaced script in s (lower-cased), in order of their
// start, longer first; and, after them, the verbs that a Chinese
// potential complement splits, joined again: 删不掉 and 删得掉 hold 删掉,
// 找不到 holds 找到, 打不开 holds 打开.
func unspacedWords(s string, maxRunes int) []string {
	s = strings.ToLower(s)
	words := scriptWords(s, isUnspacedScript, maxRunes)
	runes := []rune(s)
	for i := 1; i+1 < len(runes); i++ {
		if (runes[i] == '不' || runes[i] == '得') && isHan(runes[i-1]) && isHan(runes[i+1]) {
			words = append(words, string([]rune{runes[i-1], runes[i+1]}))
		}
	}
	return words
}
