// Package terms cuts text into the terms that overlap scores compare:
// lower-cased words for scripts that separate words with spaces, and
// character bigrams for Chinese, Japanese and Korean, which do not. It is
// for similarity and sentence picking (rerank diversity, merge
// de-duplication, the demo model's extractive answers), not for indexing.
package terms

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Set is a set of terms.
type Set map[string]struct{}

// NewSet returns the set of terms of s.
func NewSet(s string) Set {
	set := Set{}
	Each(s, func(t string) { set[t] = struct{}{} })
	return set
}

// Jaccard returns |a ∩ b| / |a ∪ b|: 1 for equal sets, 0 for disjoint
// ones (and for two empty sets).
func Jaccard(a, b Set) float64 {
	if len(a) > len(b) {
		a, b = b, a
	}
	inter := 0
	for t := range a {
		if _, ok := b[t]; ok {
			inter++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// Each calls f with every term of s in order (repeats included): words of
// letters and digits, lower-cased, without common English function words;
// and for runs of CJK characters, each pair of neighbouring characters (a
// lone character stands for itself), skipping pairs with a particle such
// as 的 or 了.
func Each(s string, f func(string)) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case isCJK(r):
			j := i
			for j < len(s) {
				r2, n := utf8.DecodeRuneInString(s[j:])
				if !isCJK(r2) {
					break
				}
				j += n
			}
			cjkBigrams(s[i:j], f)
			i = j
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			j := i
			for j < len(s) {
				r2, n := utf8.DecodeRuneInString(s[j:])
				if isCJK(r2) || !(unicode.IsLetter(r2) || unicode.IsDigit(r2) || r2 == '_') {
					break
				}
				j += n
			}
			w := strings.ToLower(s[i:j])
			if !stopWords[w] && (len(w) > 1 || unicode.IsDigit(r)) {
				f(w)
			}
			i = j
		default:
			i += size
		}
	}
}

// cjkBigrams emits the character bigrams of a run of CJK characters,
// leaving out characters that are particles or part of a question word.
func cjkBigrams(run string, f func(string)) {
	type char struct {
		at, end int
		stop    bool
	}
	var cs []char
	for i, r := range run {
		cs = append(cs, char{at: i, end: i + utf8.RuneLen(r), stop: stopChars[r]})
	}
	if len(cs) == 1 {
		if !cs[0].stop {
			f(run)
		}
		return
	}
	for i := 0; i+1 < len(cs); i++ {
		if stopBigrams[run[cs[i].at:cs[i+1].end]] {
			cs[i].stop, cs[i+1].stop = true, true
		}
	}
	for i := 0; i+1 < len(cs); i++ {
		if !cs[i].stop && !cs[i+1].stop {
			f(run[cs[i].at:cs[i+1].end])
		}
	}
}

func isCJK(r rune) bool {
	if r < firstCJK { // Latin, Greek, Cyrillic…: most of what is read, without the table searches
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// firstCJK is the lowest code point isCJK accepts: Hangul Jamo, U+1100
// (Han starts at U+2E80, Hiragana and Katakana at U+3041 and U+30A1).
const firstCJK = 0x1100

// stopWords are English function words that say nothing about a topic.
var stopWords = map[string]bool{}

// stopChars are Chinese particles and pronouns; a bigram containing one
// says nothing about a topic.
var stopChars = map[rune]bool{}

// stopBigrams are Chinese question words.
var stopBigrams = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by can could did do does for from had has have how i
		if in into is it its me my no not of on or our so than that the their them then there these they this those
		to was we were what when where which who whom why will with would you your`) {
		stopWords[w] = true
	}
	for _, r := range "的了吗呢吧啊是在我你他她它们和与或么这那哪个" {
		stopChars[r] = true
	}
	for _, w := range strings.Fields("如何 什么 怎样 怎么 为何 为什 可以 能否 是否 一个 请问") {
		stopBigrams[w] = true
	}
}
