package knowledge

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A question written in Chinese (or Japanese, Thai, any script written
// without spaces) that holds a word in Latin letters mostly uses it to
// name something — a command (tar, grep), a product, an acronym (GBK) —
// and a page about that thing says so in its title or lead. Ranked with
// the rest of the question, such a word is one term among some thirty
// characters and bigrams, and a page that merely mentions it beside many
// of the question's Chinese words comes first ("tar 解包时怎么去掉最外层
// 那个目录" found find, mv and rm before tar). So these words are searched
// once more in the title field alone (TitleSearcher) and a chunk adds
// that score × SearchOptions.NameWeight to its own (docs/retrieval.md,
// "Names in a Chinese question"). A question written mostly with spaces
// gets nothing from it: its Latin words are no names but the question,
// and the English lead score (lead_english.go, off by default) is what
// scoring them in the lead does there.

// nameTerms returns the terms of the words in Latin letters of a
// question written mostly in an unspaced script (as many characters in
// that script as words in Latin letters, or more), words of two letters
// or more, each once: "tar", "gbk", "utf" of "GBK编码转成UTF-8", not "8",
// nor "c" of an option "-C". Any other question has none: a question
// mostly in English is ranked as one, its few Chinese words or not. The
// Latin words are read from the question itself, not from its
// QueryTerms, which a long question's characters and bigrams may fill
// before its last word.
func nameTerms(query string) []string {
	unspaced, latinWords, inWord := 0, 0, false
	for _, r := range query {
		if UnspacedScript(r) {
			unspaced++
		}
		if isLatinLetter(r) && !inWord {
			latinWords++
		}
		inWord = isLatinLetter(r)
	}
	if latinWords == 0 || unspaced < latinWords {
		return nil
	}
	words := strings.Map(func(r rune) rune {
		if UnspacedScript(r) {
			return ' '
		}
		return r
	}, query)
	var out []string
	for _, t := range QueryTerms(words) {
		if utf8.RuneCountInString(t) >= 2 && strings.ContainsFunc(t, isLatinLetter) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func isLatinLetter(r rune) bool { return unicode.Is(unicode.Latin, r) }
