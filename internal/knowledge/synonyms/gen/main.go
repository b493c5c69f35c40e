// Command gen builds the tables of package synonyms from two third-party
// lexical resources, at development time (the resources are not shipped,
// only the compact tables drawn from them):
//
//   - WordNet 3.0 (Princeton University; Debian package wordnet-base,
//     /usr/share/wordnet): English words sharing a synset;
//   - CC-CEDICT (MDBG, CC BY-SA 4.0; the file cedict_ts.u8): Chinese
//     words sharing an English gloss ("修改 to alter" ~ "改变 to alter").
//
// Usage, from this directory:
//
//	go run . -wordnet /usr/share/wordnet -cedict /path/to/cedict_ts.u8 -out ..
//
// Run it again whenever knowledge.Terms changes (the English keys are
// stems). See ../SOURCES.md for where the resources come from.
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	wordnet := flag.String("wordnet", "/usr/share/wordnet", "WordNet 3.0 database directory (index.* and data.* files)")
	cedict := flag.String("cedict", "", "CC-CEDICT file (cedict_ts.u8)")
	out := flag.String("out", "..", "directory the tables are written to")
	flag.Parse()
	if *cedict == "" {
		log.Fatal("gen: -cedict is required")
	}
	en, err := englishTable(*wordnet)
	if err != nil {
		log.Fatal(err)
	}
	if err := writeTable(filepath.Join(*out, "en.tsv.gz"), en); err != nil {
		log.Fatal(err)
	}
	zh, err := chineseTable(*cedict)
	if err != nil {
		log.Fatal(err)
	}
	if err := writeTable(filepath.Join(*out, "zh.tsv.gz"), zh); err != nil {
		log.Fatal(err)
	}
}

// writeTable writes "key<TAB>related related…" lines, sorted by key,
// gzip-compressed: a stable file, so a regeneration diffs cleanly.
func writeTable(path string, table map[string][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(zw)
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s\t%s\n", k, strings.Join(table[k], " "))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err == nil {
		log.Printf("%s: %d keys, %d bytes", path, len(keys), st.Size())
	}
	return err
}
