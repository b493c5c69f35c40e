// Package synonyms holds compact tables of related words drawn from two
// third-party lexical resources, for query expansion in keyword search:
// English words sharing a WordNet 3.0 synset in the first senses of both
// ("alter" ~ "change"), and Chinese words sharing a specific English gloss
// in CC-CEDICT ("修改 to alter" ~ "改动 to alter"). The tables are built
// at development time by ./gen (see SOURCES.md for the resources and
// their licences) and embedded; they are read on first use, never at
// start-up.
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

var (
	//go:embed en.tsv.gz
	englishTable []byte
	//go:embed zh.tsv.gz
	chineseTable []byte
)

// MaxWordRunes is the longest Chinese key, in characters: a caller looking
// up the words of a run of Chinese text tries its substrings up to it.
const MaxWordRunes = 4

// load reads both tables into one map from key to its line of related
// words: the keys and lines are substrings of the decompressed text, so
// the map costs little beyond that text.
var load = sync.OnceValue(func() map[string]string {
	m := make(map[string]string, 75000)
	for _, table := range [][]byte{englishTable, chineseTable} {
		if err := read(m, table); err != nil {
			// The tables are embedded and tested: a broken one is a
			// build defect, not a run-time condition.
			panic(fmt.Sprintf("synonyms: embedded table: %v", err))
		}
	}
	return m
})

// Related returns the words related to key — an English keyword term
// (a Snowball stem: "chang" for change) or a Chinese word of two to
// MaxWordRunes characters — best first; nil when there are none. English
// words are returned as words, to be turned into terms by the caller.
// The first call reads the tables.
func Related(key string) []string {
	if line, ok := load()[key]; ok {
		return strings.Fields(line)
	}
	return nil
}

// read adds the lines "key<TAB>word word…" of a gzip'ed table to m.
func read(m map[string]string, table []byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(table))
	if err != nil {
		return err
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		return err
	}
	for line := range strings.Lines(string(text)) {
		key, words, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		if !ok || key == "" || words == "" {
			return fmt.Errorf("malformed line %q", line)
		}
		m[key] = words
	}
	return nil
}
