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
// keywordSQL weighs 0.2 and 0.1: a title-field match counts twice
// another. (SQLite's bm25 weighs it ten times; on PostgreSQL's ranking 4×
// and 10× both ranked the evaluation sets' questions worse:
// docs/retrieval.md, "Inverse document frequency on PostgreSQL".)
func termsSQL(title, others string) string {
	return `setweight(to_tsvector('simple', ` + title + `), 'B') || to_tsvector('simple', ` + others + `)`
}

// indexText is what the terms column is parsed from for text.
func indexText(text string) string { return knowledge.FoldLatin(knowledge.IndexText(text)) }

// queryOperands are terms as to_tsquery operands (their Latin accents
// folded), each once, each followed by label ("" or a restriction to the
// title field's lexemes, ":B"); nil when there are none. KeywordSearch
// passes a query's knowledge.WordQueryTerms: the index holds the single
// characters of Chinese (and other unspaced) text as well as its bigrams,
// but the query asks for the bigrams only. With them, a Chinese question's
// common characters each match most Chinese chunks, and ranking them all
// took a Chinese question 0.66 s at the median at 100,000 chunks, against
// 31 ms for the bigrams (docs/retrieval.md, "Inverse document frequency
// on PostgreSQL"). Each term is quoted, so nothing in it is operator
// syntax; to_tsquery parses the quoted text as to_tsvector parsed the
// index, so a term the parser splits becomes a phrase of its parts and
// still matches.
func queryOperands(terms []string, label string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range terms {
		t = knowledge.FoldLatin(t)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, "'"+quoteEscaper.Replace(t)+"'"+label)
	}
	return out
}

// quoteEscaper escapes a term for a quoted to_tsquery operand.
var quoteEscaper = strings.NewReplacer(`'`, `''`, `\`, `\\`)
