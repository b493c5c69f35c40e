// Package synonyms holds two compact tables drawn from a third-party
// dictionary, CC-CEDICT, for query expansion in keyword search: related
// Chinese words — words sharing a specific English gloss ("修改 to alter"
// ~ "变更 to alter"), the gloss a pivot between two Chinese words — and
// the English words of a Chinese word's main glosses (修改 → amend alter
// modify), a bridge from a Chinese question to the English of a page. The
// tables are built at development time by ./gen (see SOURCES.md for the
// resource and its licence) and embedded; each is read on first use,
// never at start-up.
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
