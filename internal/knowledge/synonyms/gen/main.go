// Command gen builds the tables of package synonyms from a third-party
// lexical resource, at development time (the resource is not shipped,
// only the compact table drawn from it): CC-CEDICT (MDBG, CC BY-SA 4.0;
// the file cedict_ts.u8), Chinese words sharing a specific English gloss
// ("修改 to alter" ~ "变更 to alter", zh.tsv.gz) and the English words of a
// word's first glosses (修改 → amend alter modify, zh_en.tsv.gz).
//
// Usage, from this directory:
//
//	go run . -cedict /path/to/cedict_ts.u8 -out ..
//
// See ../SOURCES.md for where the resource comes from.
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
	cedict := flag.String("cedict", "", "CC-CEDICT file (cedict_ts.u8)")
	out := flag.String("out", "..", "directory the tables are written to")
	flag.Parse()
	if *cedict == "" {
		log.Fatal("gen: -cedict is required")
	}
	zh, err := chineseTable(*cedict)
	if err != nil {
		log.Fatal(err)
	}
	if err := writeTable(filepath.Join(*out, "zh.tsv.gz"), zh); err != nil {
		log.Fatal(err)
	}
	en, err := englishTable(*cedict)
	if err != nil {
		log.Fatal(err)
	}
	if err := writeTable(filepath.Join(*out, "zh_en.tsv.gz"), en); err != nil {
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
