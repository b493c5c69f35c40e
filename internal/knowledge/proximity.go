package knowledge

import (
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// Words that stand near each other in a question ("child process",
// "symbolic link") are stronger evidence when a passage holds them near
// each other too than when they are scattered over it. Keyword search
// therefore scores each pair of neighbouring query words once more, as a
// proximity: how well a chunk matches the pairs is added to its score
// with a small weight (see the SQLite store's KeywordSearch). On the
// evaluation set (docs/retrieval.md) a window of 4 to 8 terms was best,
// 12 and 16 less good; pairs of Chinese bigrams (three characters in a
// row) lowered the ranking and are not made.

// ProximityWindow is how many other terms may stand between the two
// words of a proximity, in either order.
const ProximityWindow = 6

// QueryProximities returns the pairs of neighbouring English content
// words of a query, in order, each as two index terms (see Terms):
// function words between them are skipped ("copy of the process" pairs
// copi and process), a Chinese run or a repeated word breaks the chain.
// At most maxQueryTerms pairs; none for a query of fewer than two words.
func QueryProximities(query string) [][2]string {
	var pairs [][2]string
	seen := make(map[[2]string]bool)
	prev := "" // the last content word, "" after a Chinese run
	for _, t := range Terms(query) {
		switch {
		case isUnspacedTerm(t):
			prev = ""
			continue
		case stopWords[t] || english.IsStopWord(t):
			continue
		}
		if p := [2]string{prev, t}; prev != "" && prev != t && !seen[p] && len(pairs) < maxQueryTerms {
			seen[p] = true
			pairs = append(pairs, p)
		}
		prev = t
	}
	return pairs
}

// isUnspacedTerm reports whether a term is a character or bigram of a
// script written without spaces.
func isUnspacedTerm(t string) bool {
	r, _ := utf8.DecodeRuneInString(t)
	return UnspacedScript(r)
}
