package knowledge

import (
	"context"
	"strings"
)

// A page's lead (see Lead) is indexed in the title field of every chunk,
// where bm25 weighs it ten times a chunk's text, but in one saturating
// term frequency with the chunk's heading and text: a word found in both
// the lead and the text counts little more than one found in the text
// alone, so raising the title weight changes nothing (docs/retrieval.md).
// For English the lead is the best evidence of what a page is about — a
// manual page's NAME line, "fork - create a child process" — so keyword
// search can score it once more on its own: the question's words written
// with spaces (its QueryTerms that are no CJK characters or bigrams:
// English, and Cyrillic, Greek or numbers alike) and its English bridge (BridgeTerms, for
// a Chinese question) are searched in the title field only
// (TitleSearcher), and a chunk that holds no Chinese adds that score ×
// SearchOptions.LeadWeight to its own. Chunks holding Chinese get nothing
// from it: the English of a Chinese page's lead is mostly its command
// name, which an English question naming the command would otherwise
// pull above the English page that answers it.
//
// It is off by default: on the tuning sets 0.2 to 0.4 all raise MRR
// (0.3 most, 0.5 lowers it), most for Chinese questions about English
// pages, but it lowers the cut pages' held-out MRR by one question, and
// the query searches every chunk's title field again, 5–11 ms more of a
// rag question's first byte at 100,000 chunks (docs/retrieval.md).

// TitleSearcher is implemented by stores that can search the title field
// (a document's title and lead, TitleText) alone; the service uses it
// when the store has it.
type TitleSearcher interface {
	// KeywordSearchTitleTerms is KeywordSearchTerms restricted to
	// matches in the title field; scores are on KeywordSearch's scale.
	KeywordSearchTitleTerms(ctx context.Context, tenantIDs, terms []string, limit int) ([]Hit, error)
}

// leadEnglishTerms returns the spaced-script terms of query and the terms
// of its bridge, each once; nil when there are none.
func leadEnglishTerms(query string, bridge []string) []string {
	var out []string
	seen := make(map[string]bool)
	for _, terms := range [][]string{QueryTerms(query), bridge} {
		for _, t := range terms {
			if !isUnspacedTerm(t) && !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// holdsChinese reports whether a hit's title or text holds a Han character.
func holdsChinese(h Hit) bool {
	return strings.ContainsFunc(h.Title, isHan) || strings.ContainsFunc(h.Content, isHan)
}

// withoutChinese returns the hits that hold no Chinese, in order.
func withoutChinese(hits []Hit) []Hit {
	out := hits[:0:0]
	for _, h := range hits {
		if !holdsChinese(h) {
			out = append(out, h)
		}
	}
	return out
}
