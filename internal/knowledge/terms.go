package knowledge

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"golang.org/x/text/unicode/norm"
)

// Keyword search indexes terms, not raw text, because full-text tokenisers
// split on spaces and Chinese has none: SQLite's unicode61 would index a
// whole run of Han characters as one token, so a query for one word of the
// run finds nothing. Terms therefore turns a run of characters of a script
// written without spaces (Han, kana, Hangul, Thai, Lao, Khmer, Myanmar)
// into its characters and their overlapping bigrams ("知识库" → "知" "知识"
// "识" "识库" "库"), and a run of other letters, digits and marks into one
// lower-cased word. Index and query go through the same function, so a
// Chinese query matches wherever its bigrams occur, and bm25 ranks a
// chunk sharing a whole word above one sharing single characters. The
// characters (unigrams) find what bigrams miss: a question and a document
// writing a word differently (删掉 and 删除, 压得 and 压缩) still share
// a character, and bm25's inverse document frequency keeps common ones
// (的, 是) from counting; with them keyword MRR on the evaluation set rose
// from 0.747 to 0.812 (docs/retrieval.md).

// TermsVersion names the current definition of Terms. The stores record
// the version their keyword index was built with and rebuild the index at
// open when it differs: a query's terms only match an index built by the
// same definition. Bump it whenever Terms changes what it returns.
// Version 1: Snowball stems, Chinese runs joined across line wraps.
// Version 2: characters of unspaced scripts besides their bigrams, and
// each document's lead (see Lead) in the title field.
// Version 3: full-width Latin letters and digits folded to ASCII (with
// x/text/width's Fold, which also rewrote half-width katakana marks).
// Version 4: that fold kept to full-width letters and digits.
// Version 5: irregular English forms and British spellings stemmed as
// their base word (englishBase).
const TermsVersion = 5

// maxQueryTerms bounds the terms one query searches for: a pasted page
// must not become a thousand-term OR.
const maxQueryTerms = 64

// Terms returns the keyword-index terms of text in order, repeats
// included. Every term consists of letters, digits and marks only.
func Terms(text string) []string {
	var terms []string
	forEachTerm(text, true, func(t string) bool { terms = append(terms, t); return true })
	return terms
}

// IndexText returns the terms of text joined by spaces: what a keyword
// index stores for text.
func IndexText(text string) string {
	var b strings.Builder
	b.Grow(len(text) + len(text)/2)
	forEachTerm(text, true, func(t string) bool {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
		return true
	})
	return b.String()
}

// QueryTerms returns the distinct terms of a search query, in order, at
// most 64. Common English function words ("the", "how", …) are left out
// when other terms remain: they match nearly every chunk, so they cost
// time and add nothing to the ranking.
func QueryTerms(query string) []string { return queryTerms(query, true) }

// WordQueryTerms is QueryTerms without the single characters of the runs
// of unspaced script longer than one character, only their bigrams: for
// PostgreSQL, where ranking every chunk that holds a common character
// costs far more than it gains (pgstore.queryOperands).
func WordQueryTerms(query string) []string { return queryTerms(query, false) }

func queryTerms(query string, characters bool) []string {
	var all, content []string
	seen := make(map[string]bool)
	forEachTerm(query, characters, func(t string) bool {
		if seen[t] {
			return true
		}
		seen[t] = true
		all = append(all, t)
		if !isStopTerm(t) {
			content = append(content, t)
		}
		return len(content) < maxQueryTerms
	})
	if len(content) == 0 {
		content = all
	}
	if len(content) > maxQueryTerms {
		content = content[:maxQueryTerms]
	}
	return content
}

// forEachTerm calls yield with each term of text until it returns false;
// characters=false leaves out the characters of runs of unspaced script
// that also yield bigrams.
func forEachTerm(text string, characters bool, yield func(string) bool) {
	var word strings.Builder
	flushWord := func() bool {
		if word.Len() == 0 {
			return true
		}
		w := strings.ToLower(word.String())
		if !isASCII(w) {
			w = narrowLatin(w)
		}
		t := stem(w)
		word.Reset()
		return yield(t)
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case UnspacedScript(r):
			if !flushWord() {
				return
			}
			// The run of unspaced-script runes starting at i, across line
			// wraps (see wrapGap).
			start, end, n := i, i, 0
			var joined []byte // the run without its wraps, once it had one
			for end < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[end:])
				if gap := wrapGap(text[end:]); n > 0 && gap > 0 {
					joined = append(joined, text[start:end]...)
					end += gap
					start = end
					continue
				}
				if !UnspacedScript(r2) && !(n > 0 && unicode.IsMark(r2)) {
					break
				}
				end += s2
				if !unicode.IsMark(r2) {
					n++
				}
			}
			run := text[start:end]
			if joined != nil {
				run = string(append(joined, run...))
			}
			if !yieldBigrams(run, n, characters, yield) {
				return
			}
			i = end
			continue
		case unicode.IsLetter(r) || unicode.IsNumber(r) || (unicode.IsMark(r) && word.Len() > 0):
			word.WriteRune(r)
		default:
			if !flushWord() {
				return
			}
		}
		i += size
	}
	flushWord()
}

// narrowLatin folds the full-width forms of ASCII letters and digits
// (U+FF10–U+FF5A), as Chinese and Japanese input methods type them
// (ＰＤＦ, Ｖ２), to ASCII; nothing else changes (golang.org/x/text/width's
// Fold also rewrites half-width katakana and its sound marks, which are
// another matter).
func narrowLatin(w string) string {
	return strings.Map(func(r rune) rune {
		if r >= '０' && r <= 'ｚ' {
			return r - ('０' - '0')
		}
		return r
	}, w)
}

// yieldBigrams yields each character of run (n base characters, each
// possibly followed by combining marks that stay attached to it) and the
// bigram it starts, in order: 知识库 → 知 知识 识 识库 库 (only the bigrams
// when characters is false); run itself when it is a single character.
func yieldBigrams(run string, n int, characters bool, yield func(string) bool) bool {
	if n <= 1 {
		return yield(run)
	}
	// starts[k] is the byte offset of the k-th base character.
	starts := make([]int, 0, n+1)
	for i, r := range run {
		if !unicode.IsMark(r) {
			starts = append(starts, i)
		}
	}
	starts = append(starts, len(run))
	for k := 0; k+2 < len(starts); k++ {
		if characters && !yield(run[starts[k]:starts[k+1]]) {
			return false
		}
		if !yield(run[starts[k]:starts[k+2]]) {
			return false
		}
	}
	return !characters || yield(run[starts[len(starts)-2]:])
}

// UnspacedScript reports whether r belongs to a script written without
// spaces between words (Han, kana, Hangul, Thai, Lao, Khmer, Myanmar),
// which keyword search indexes as characters and bigrams rather than as
// words.
func UnspacedScript(r rune) bool {
	if r < 0x0E00 { // below Thai: Latin, Greek, Cyrillic, Arabic, Indic…
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul,
		unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}

// stopWords are English function words left out of queries (not of the
// index): bm25 would give them almost no weight anyway.
var stopWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`a an and are as at be but by can could do does did for from
		had has have how i if in into is it its me my of on or our should so that the their them
		then there these they this those to was we were what when where which who whom why will
		with would you your`) {
		m[w] = true
	}
	return m
}()

// isStopTerm reports whether t is an English function word.
func isStopTerm(t string) bool { return stopWords[t] || english.IsStopWord(t) }

// stem reduces an English word to its Snowball stem ("returned",
// "returns" → "return"), so that a query finds the other inflections of
// its words. Only words of ASCII letters are English candidates: a word
// with digits (utf8, x86) or of another script stays as it is.
//
// A Latin word with accents is stemmed without them ("ünïcödé" →
// "unicod") and its accents are then dropped from the index: the stores
// fold accents anyway (FTS5's remove_diacritics, the PostgreSQL store's
// own folding), and the stem of the plain word must match.
func stem(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			if c < utf8.RuneSelf {
				return w
			}
			if f := FoldLatin(w); f != w && isLowerASCII(f) {
				return stem(f)
			}
			return w
		}
	}
	return english.Stem(englishBase(w), false)
}

// FoldLatin removes the combining marks of Latin letters ("café" →
// "cafe"), leaving other scripts' marks alone; ASCII is returned as is.
func FoldLatin(s string) string {
	if isASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	var base rune
	for _, r := range norm.NFD.String(s) {
		if unicode.Is(unicode.Mn, r) && unicode.Is(unicode.Latin, base) {
			continue
		}
		if !unicode.IsMark(r) {
			base = r
		}
		b.WriteRune(r)
	}
	return norm.NFC.String(b.String())
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isLowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// wrapGap returns the length of the white space at the start of s when it
// is a line wrap or justification inside a run of unspaced script: spaces
// and tabs with at most one line break, followed by an unspaced-script
// character. Text extracted from manual pages, PDFs and hard-wrapped
// files breaks Chinese lines anywhere, even inside a word ("文件系\n统"),
// and a word cut in two would lose its bigram. A blank line (a paragraph
// break) is no wrap. It returns 0 otherwise.
func wrapGap(s string) int {
	newlines, i := 0, 0
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\r':
		case '\n':
			newlines++
			if newlines > 1 {
				return 0
			}
		default:
			if i == 0 {
				return 0
			}
			r, _ := utf8.DecodeRuneInString(s[i:])
			if UnspacedScript(r) {
				return i
			}
			return 0
		}
		i++
	}
	return 0
}
