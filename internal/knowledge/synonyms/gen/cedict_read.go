package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// eachCedictEntry calls fn with the simplified headword and the glosses
// of each entry of a CC-CEDICT file ("傳統 传统 [chuan2 tong3] /tradition/
// traditional/").
func eachCedictEntry(path string, fn func(simplified string, glosses []string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		heads, rest, ok := strings.Cut(line, " [")
		_, glosses, ok2 := strings.Cut(rest, "] /")
		words := strings.Fields(heads)
		if !ok || !ok2 || len(words) != 2 {
			return fmt.Errorf("%s: malformed entry %q", path, line)
		}
		fn(words[1], strings.Split(strings.TrimSuffix(glosses, "/"), "/"))
	}
	return sc.Err()
}
