package knowledge

import (
	"slices"
	"strings"
	"unicode"
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
// "Names in a Chinese question"). A question written with spaces gets
// nothing from it: all its words are Latin, and the English lead score
// (lead_english.go, off by default) is what scoring them in the lead does
// there.

// nameTerms returns the terms of a question in an unspaced script (terms
// are its QueryTerms) that are written in a spaced one and hold a letter,
// each once: "tar", "gbk", "utf" of "GBK 转 UTF-8", not "8"; nil for any
// other question.
func nameTerms(query string, terms []string) []string {
	if !strings.ContainsFunc(query, UnspacedScript) {
		return nil
	}
	var out []string
	for _, t := range terms {
		if !isUnspacedTerm(t) && strings.ContainsFunc(t, unicode.IsLetter) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}
