package main

import (
	"flag"
	"strings"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

var (
	// maxGlosses: the first glosses of a word are its main senses; the
	// later ones are rarer and would only add noise to a query.
	maxGlosses = flag.Int("en-glosses", 3, "glosses of a word whose English words are kept")
	// maxEnglishWords bounds the English words kept for one word.
	maxEnglishWords = flag.Int("en-words", 3, "most English words kept for a Chinese word")
)

// englishTable maps each simplified CC-CEDICT word of two to four Han
// characters to the English content words of its first short glosses
// (修改 → amend alter modify): a bridge from a Chinese question to the
// English a page shares with it (option names, untranslated paragraphs,
// English pages).
func englishTable(path string) (map[string][]string, error) {
	table := make(map[string][]string)
	err := eachCedictEntry(path, func(simplified string, glosses []string) {
		if n := utf8.RuneCountInString(simplified); n < minWordRunes || n > maxWordRunes || !allHan(simplified) {
			return
		}
		kept := 0
		for _, g := range glosses {
			for _, part := range strings.Split(g, ";") {
				g := normalizeGloss(part)
				if g == "" || kept >= *maxGlosses {
					continue
				}
				kept++
				for _, w := range strings.Fields(g) {
					w = strings.Trim(w, ".,'\"!?")
					if len(w) < 3 || english.IsStopWord(w) || !isASCIIWord(w) {
						continue
					}
					if cur := table[simplified]; len(cur) < *maxEnglishWords && !contains(cur, w) {
						table[simplified] = append(cur, w)
					}
				}
			}
		}
	})
	return table, err
}

func isASCIIWord(w string) bool {
	for _, r := range w {
		if (r < 'a' || r > 'z') && r != '-' {
			return false
		}
	}
	return true
}

func contains(s []string, w string) bool {
	for _, x := range s {
		if x == w {
			return true
		}
	}
	return false
}
