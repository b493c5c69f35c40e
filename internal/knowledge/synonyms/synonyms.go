// Package synonyms holds two compact tables drawn from a third-party
// dictionary, CC-CEDICT, for query expansion in keyword search: related
// Chinese words — words sharing a specific English gloss ("修改 to alter"
// ~ "变更 to alter"), the gloss a pivot between two Chinese words — and
// the English words of a Chinese word's main glosses (修改 → amend alter
// modify), a bridge from a Chinese question to the English of a page. The
// tables are built at development time by ./gen (see SOURCES.md for the
// resource and its licence) and embedded; each is read on first use,
// never at start-up. It also holds the synonym groups chatpipe ships
// (groups.txt, written for chatpipe: Builtin) and reads an operator's
// (ParseGroups).
package synonyms

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"strings"
	"sync"
)

//go:embed zh.tsv.gz
var chineseTable []byte

//go:embed zh_en.tsv.gz
var englishTable []byte

// MaxWordRunes is the longest key, in characters: a caller looking up the
// words of a run of Chinese text tries its substrings up to it.
const MaxWordRunes = 4

// load reads the table into a map from a word to its line of related
// words. The keys and lines are substrings of the decompressed text, so
// the map costs little beyond that text (about 2 MB).
var (
	load        = sync.OnceValue(func() map[string]string { return mustRead(chineseTable) })
	loadEnglish = sync.OnceValue(func() map[string]string { return mustRead(englishTable) })
)

func mustRead(table []byte) map[string]string {
	m, err := read(table)
	if err != nil {
		// The tables are embedded and tested: a broken one is a build
		// defect, not a run-time condition.
		panic(fmt.Sprintf("synonyms: embedded table: %v", err))
	}
	return m
}

// Related returns the words related to a Chinese word of two to
// MaxWordRunes characters, best first; nil when there are none. The first
// call reads the table (a few tens of milliseconds).
func Related(word string) []string {
	if line, ok := load()[word]; ok {
		return strings.Fields(line)
	}
	return nil
}

// English returns the English content words of a Chinese word's first
// CC-CEDICT glosses, main sense first (修改 → amend alter modify); nil
// when the word is not in the dictionary. The first call reads the table
// (a few tens of milliseconds).
func English(word string) []string {
	if line, ok := loadEnglish()[word]; ok {
		return strings.Fields(line)
	}
	return nil
}

// read parses the lines "word<TAB>words…" of a gzip'ed table.
func read(table []byte) (map[string]string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(table))
	if err != nil {
		return nil, err
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, 1<<16)
	for line := range strings.Lines(string(text)) {
		key, words, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		if !ok || key == "" || words == "" {
			return nil, fmt.Errorf("malformed line %q", line)
		}
		m[key] = words
	}
	return m, nil
}

//go:embed groups.txt
var builtinGroups string

// MaxGroupWords bounds the words of one group: a group relates each of
// its words to all the others, so a long one is mostly noise.
const MaxGroupWords = 12

// Group is one group of related words (or phrases of a few words), lower
// case, and the line of the text it was read from.
type Group struct {
	Line  int
	Words []string
}

// Builtin returns the groups of words that chatpipe ships (groups.txt):
// everyday and computing words in English and Chinese that questions and
// documents use for one another.
var Builtin = sync.OnceValue(func() []Group {
	groups, err := ParseGroups(builtinGroups)
	if err != nil {
		panic(fmt.Sprintf("synonyms: groups.txt: %v", err))
	}
	return groups
})

// separators are the commas a group's words may be separated by.
var separators = strings.NewReplacer("，", ",", "、", ",")

// ParseGroups reads groups of related words: one group per line, its
// words (or phrases of a few words) separated by commas (or the Chinese
// ，and 、); blank lines and lines starting with '#' are skipped, and so is
// a byte-order mark. A group needs two to MaxGroupWords distinct words.
func ParseGroups(text string) ([]Group, error) {
	var groups []Group
	text = strings.TrimPrefix(text, "\ufeff")
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		g := Group{Line: i + 1}
		seen := map[string]bool{}
		for w := range strings.SplitSeq(separators.Replace(line), ",") {
			w = strings.Join(strings.Fields(strings.ToLower(w)), " ")
			if w == "" {
				return nil, fmt.Errorf("line %d: an empty word (two commas in a row, or a comma at an end)", i+1)
			}
			if seen[w] {
				return nil, fmt.Errorf("line %d: %q listed twice", i+1, w)
			}
			seen[w] = true
			g.Words = append(g.Words, w)
		}
		if len(g.Words) < 2 {
			return nil, fmt.Errorf("line %d: a group needs at least two words separated by commas", i+1)
		}
		if len(g.Words) > MaxGroupWords {
			return nil, fmt.Errorf("line %d: %d words; a group may have at most %d", i+1, len(g.Words), MaxGroupWords)
		}
		groups = append(groups, g)
	}
	return groups, nil
}
