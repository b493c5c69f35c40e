package main

import (
	"cmp"
	"flag"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

var (
	// maxGlossWords keeps short glosses only: "to alter" names a meaning
	// two words can share; "to put on clothes in a hurry" does not.
	maxGlossWords = flag.Int("gloss-words", 3, "longest gloss shared, in words")
	// maxGlossDF drops glosses shared by so many words ("to put",
	// "to hit") that sharing them says little.
	maxGlossDF = flag.Int("gloss-df", 30, "most words sharing a gloss")
	// maxChineseRelated bounds the words kept for one word.
	maxChineseRelated = flag.Int("zh-related", 3, "most related words kept for a Chinese word")
)

// minWordRunes, maxWordRunes: the words kept (single characters are
// already terms of their own, and expand to too much).
const minWordRunes, maxWordRunes = 2, 4

// parenthesised removes "(…)" and "[…]" asides from a gloss.
var parenthesised = regexp.MustCompile(`\([^)]*\)|\[[^\]]*\]`)

// chineseTable maps each simplified CC-CEDICT word of two to four Han
// characters to the words sharing its most specific English glosses,
// best first: a word b is related to a by Σ 1/ln(1+df(g)) over the
// glosses g they share, df(g) being how many words have g.
func chineseTable(path string) (map[string][]string, error) {
	glossesOf := make(map[string]map[string]bool)
	if err := eachCedictEntry(path, func(simplified string, glosses []string) {
		if n := utf8.RuneCountInString(simplified); n < minWordRunes || n > maxWordRunes || !allHan(simplified) {
			return
		}
		for _, g := range glosses {
			for _, part := range strings.Split(g, ";") {
				if g := normalizeGloss(part); g != "" {
					if glossesOf[simplified] == nil {
						glossesOf[simplified] = make(map[string]bool)
					}
					glossesOf[simplified][g] = true
				}
			}
		}
	}); err != nil {
		return nil, err
	}
	wordsOf := make(map[string][]string)
	for w, gs := range glossesOf {
		for g := range gs {
			wordsOf[g] = append(wordsOf[g], w)
		}
	}
	table := make(map[string][]string)
	for w, gs := range glossesOf {
		score := make(map[string]float64)
		for g := range gs {
			others := wordsOf[g]
			if len(others) < 2 || len(others) > *maxGlossDF {
				continue
			}
			for _, o := range others {
				if o != w {
					score[o] += 1 / math.Log(1+float64(len(others)))
				}
			}
		}
		if len(score) == 0 {
			continue
		}
		rel := make([]string, 0, len(score))
		for o := range score {
			rel = append(rel, o)
		}
		slices.SortFunc(rel, func(a, b string) int {
			return cmp.Or(cmp.Compare(score[b], score[a]), strings.Compare(a, b))
		})
		table[w] = rel[:min(len(rel), *maxChineseRelated)]
	}
	return table, nil
}

// normalizeGloss returns a gloss lower-cased without its asides, or ""
// when it names no meaning to share: a cross-reference, a surname, a
// classifier list, or a gloss longer than maxGlossWords words.
func normalizeGloss(g string) string {
	g = strings.ToLower(strings.TrimSpace(g))
	for _, p := range []string{"variant of", "old variant", "see ", "surname", "used in", "abbr.", "cl:", "also written", "also pr.", "erhua", "(bound form)", "lit.", "fig."} {
		if strings.HasPrefix(g, p) {
			return ""
		}
	}
	g = strings.Join(strings.Fields(parenthesised.ReplaceAllString(g, " ")), " ")
	if g == "" || len(strings.Fields(g)) > *maxGlossWords {
		return ""
	}
	for _, r := range g {
		if r >= utf8.RuneSelf || unicode.IsDigit(r) {
			return ""
		}
	}
	if onlyFunctionWords(g) {
		return ""
	}
	return g
}

// onlyFunctionWords reports whether a gloss is made of English function
// words alone ("how", "what", "one", "to be"): the words glossed so are
// function words themselves, and sharing such a gloss relates nothing.
func onlyFunctionWords(g string) bool {
	for _, w := range strings.Fields(g) {
		if !english.IsStopWord(w) {
			return false
		}
	}
	return true
}

func allHan(s string) bool {
	for _, r := range s {
		if !unicode.Is(unicode.Han, r) {
			return false
		}
	}
	return true
}
