package knowledge

import (
	"cmp"
	"slices"
	"strings"
	"unicode"

	"github.com/chatpipe/chatpipe/internal/knowledge/synonyms"
)

// Keyword search finds only the words a question shares with a document,
// and questions often use others: 修改 for a page saying 变更, 删除 for
// 删去. ExpansionTerms adds the words that a third-party dictionary
// relates to the query's (package synonyms: Chinese words sharing a
// CC-CEDICT gloss), and the service searches them apart, a chunk scoring
//
//	score(query terms) + expansionWeight × score(expansion terms)
//
// so that a related word counts for less than the question's own and a
// chunk matching the question's words still comes first. English
// expansion from WordNet was measured too and left out: it lowered the
// held-out numbers (docs/retrieval.md, "Expansion from a lexical
// resource").

const (
	// expansionWeight is what a chunk's score for the expansion terms
	// counts against its score for the query's own terms (measured with
	// English expansion too: 0.3 to 0.6 within 0.007 keyword MRR of each
	// other on the tuning questions, 1 lowering recall@1).
	expansionWeight = 0.3
	// bridgeWeight is what a chunk's score for BridgeTerms counts
	// against its score for the query's own terms when the chunk holds
	// Chinese (it also matched, or could have matched, the question's
	// words); bridgeForeignWeight when it holds none, an English page
	// that only the bridge can reach. Chosen on the tuning questions and
	// the cross-lingual tuning questions (docs/retrieval.md, "An English
	// bridge for Chinese questions"): above 1 for Chinese chunks, English
	// matches outrank a Chinese page's own words; above 1.25 for the
	// others, the held-out numbers fall.
	bridgeChineseWeight = 0.5
	bridgeForeignWeight = 1.25
	// maxExpansionTerms bounds the terms one query's expansion (or its
	// bridge) adds.
	maxExpansionTerms = 32
)

// ExpansionTerms returns the keyword terms related to the words of query
// that are not among its own QueryTerms: the bigrams of the Chinese words
// related to the dictionary words found in its runs of Han characters
// (every substring of two to synonyms.MaxWordRunes characters that is a
// word of the table: a query-side segmentation, with no cost at index
// time). At most maxExpansionTerms, the related words of earlier query
// words first; nil for a query without Chinese.
func ExpansionTerms(query string) []string {
	_, related := queryExpansions(query)
	return related
}

// BridgeTerms returns the English keyword terms (stems) of the glosses of
// the dictionary words found in query's runs of Han characters, found as
// ExpansionTerms finds them: 修改 → amend alter modify. Chinese pages
// often keep English (option names, untranslated paragraphs) and a
// knowledge base may hold English pages; the service searches these
// apart, weighted by bridgeWeight. nil for a query without Chinese.
func BridgeTerms(query string) []string {
	bridge, _ := queryExpansions(query)
	return bridge
}

// queryExpansions returns query's BridgeTerms and ExpansionTerms, reading
// its Han words and its own terms once for both.
func queryExpansions(query string) (bridge, related []string) {
	words := hanWords(query)
	if len(words) == 0 {
		return nil, nil
	}
	own := QueryTerms(query)
	return termsOfWords(words, own, synonyms.English), termsOfWords(words, own, synonyms.Related)
}

// termsOfWords returns the query terms of the words that lookup gives for
// each of words, leaving out the query's own terms, each once, at most
// maxExpansionTerms.
func termsOfWords(words, own []string, lookup func(word string) []string) []string {
	seen := make(map[string]bool, len(own))
	for _, t := range own {
		seen[t] = true
	}
	var out []string
	for _, word := range words {
		for _, w := range lookup(word) {
			for _, t := range WordQueryTerms(w) {
				if !seen[t] && len(out) < maxExpansionTerms {
					seen[t] = true
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// hanWords returns the substrings of two to synonyms.MaxWordRunes Han
// characters of s, in order of their start, longer first.
func hanWords(s string) []string { return scriptWords(s, isHan, synonyms.MaxWordRunes) }

// scriptWords returns the substrings of two to maxRunes characters of the
// runs of characters of s for which in is true, in order of their start,
// longer first.
func scriptWords(s string, in func(rune) bool, maxRunes int) []string {
	var words []string
	var run []int // byte offsets of the current run's characters, and its end
	flush := func(end int) {
		run = append(run, end)
		for i := 0; i+2 < len(run); i++ {
			for n := min(maxRunes, len(run)-1-i); n >= 2; n-- {
				words = append(words, s[run[i]:run[i+n]])
			}
		}
		run = run[:0]
	}
	for i, r := range s {
		if in(r) {
			run = append(run, i)
			continue
		}
		if len(run) > 0 {
			flush(i)
		}
	}
	if len(run) > 0 {
		flush(len(s))
	}
	return words
}

// bridgeWeight is the weight of a chunk's bridge score: see
// bridgeChineseWeight.
func bridgeWeight(h Hit) float64 {
	if strings.ContainsFunc(h.Title, isHan) || strings.ContainsFunc(h.Content, isHan) {
		return bridgeChineseWeight
	}
	return bridgeForeignWeight
}

func isHan(r rune) bool { return unicode.Is(unicode.Han, r) }

// addExpansion combines a query's hits with its expansion's (both best
// first, scores higher-is-better): a chunk scores its query score plus
// weight(chunk) times its expansion score, 0 for a ranking that did not
// return it. It returns the best limit, ties in the order of the query's hits,
// then of the expansion's.
func addExpansion(hits, expansion []Hit, weight func(Hit) float64, limit int) []Hit {
	if len(expansion) == 0 {
		return hits
	}
	type scored struct {
		Hit
		order int
	}
	byID := make(map[string]int, len(hits)+len(expansion))
	all := make([]scored, 0, len(hits)+len(expansion))
	for _, h := range hits {
		byID[h.ChunkID] = len(all)
		all = append(all, scored{h, len(all)})
	}
	for _, h := range expansion {
		if i, ok := byID[h.ChunkID]; ok {
			all[i].Score += weight(h) * h.Score
			continue
		}
		h.Score *= weight(h)
		all = append(all, scored{h, len(all)})
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.order, b.order))
	})
	out := make([]Hit, 0, min(limit, len(all)))
	for _, s := range all[:min(limit, len(all))] {
		out = append(out, s.Hit)
	}
	return out
}
