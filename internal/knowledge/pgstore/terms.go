package pgstore

import (
	"strings"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// Keyword terms are knowledge's (lower-cased words, CJK bigrams), the
// same as the SQLite store indexes, with one more step the SQLite store
// gets from its FTS5 tokenizer (unicode61 remove_diacritics 2): the
// diacritics of Latin letters are removed, so "unicode" finds "ünïcödé".
// Other scripts keep their marks, as FTS5 does (a Devanagari vowel sign is
// no accent). Index and query go through knowledge.FoldLatin alike.

// termsSQL is the SQL computing a chunk's terms column from the
// parameters title, the title field (its document's title and lead,
// knowledge.TitleText), and others, its heading and text. The title
// field's lexemes are labelled B and the others keep the default D, which
// ts_rank's default weights count 0.4 and 0.1: a title-field match weighs
// four times another. (SQLite's bm25 weighs it ten times, but ts_rank
// has no inverse document frequency to temper it: over the samples'
// questions, keyword recall@3 is 0.84 with A (1.0), 0.90 with B or C,
// 0.92 unweighted, against SQLite's 0.90.)
func termsSQL(title, others string) string {
	return `setweight(to_tsvector('simple', ` + title + `), 'B') || to_tsvector('simple', ` + others + `)`
}

// indexText is what the terms column is parsed from for text.
func indexText(text string) string { return knowledge.FoldLatin(knowledge.IndexText(text)) }

// termsExpression is a to_tsquery expression ORing terms (their Latin
// accents folded), or "" when there are none. KeywordSearch passes a
// query's knowledge.WordQueryTerms: the index holds the single characters
// of Chinese (and other unspaced) text as well as its bigrams, but the
// query asks for the bigrams only, because ts_rank has no inverse
// document frequency, so a common character would weigh as much as a
// word (over the conformance suite, 怎么取消生成 then found the wrong
// document first). Each term is quoted, so nothing in it is operator
// syntax; to_tsquery parses the quoted text as to_tsvector parsed the
// index, so a term the parser splits becomes a phrase of its parts and
// still matches.
func termsExpression(terms []string) string { return labelledExpression(terms, "") }

// titleTermsExpression is termsExpression matching the title field's
// lexemes only (label B, see termsSQL): KeywordSearchTitleTerms.
func titleTermsExpression(terms []string) string { return labelledExpression(terms, ":B") }

// labelledExpression ORs terms as termsExpression says, each operand
// followed by label ("" or a weight restriction such as ":B").
func labelledExpression(terms []string, label string) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, t := range terms {
		t = knowledge.FoldLatin(t)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		if b.Len() > 0 {
			b.WriteString(" | ")
		}
		b.WriteByte('\'')
		b.WriteString(quoteEscaper.Replace(t))
		b.WriteByte('\'')
		b.WriteString(label)
	}
	return b.String()
}

// quoteEscaper escapes a term for a quoted to_tsquery operand.
var quoteEscaper = strings.NewReplacer(`'`, `''`, `\`, `\\`)
