package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

var (
	// maxSenseRank keeps a synonym pair only when the synset is among
	// the first senses (WordNet orders a word's senses by how often they
	// were seen in its tagged corpus) of both words: "alter" ~ "change",
	// not "change" ~ "shift" through the rare sense of each.
	maxSenseRank = flag.Int("senses", 2, "a synonym pair's synset is among the first this many senses of both words")
	// maxEnglishRelated bounds the words kept for one stem.
	maxEnglishRelated = flag.Int("en-related", 8, "most related words kept for an English stem")
)

var wordnetPOS = []string{"noun", "verb", "adj", "adv"}

// englishTable maps the stem (knowledge.Terms) of each one-word WordNet
// lemma to the other one-word lemmas of its first senses' synsets whose
// first senses hold that synset too.
func englishTable(dir string) (map[string][]string, error) {
	// rank[pos+offset][lemma] = the synset's place among the lemma's senses.
	rank := make(map[string]map[string]int)
	for _, pos := range wordnetPOS {
		if err := eachLine(filepath.Join(dir, "index."+pos), func(line string) error {
			f := strings.Fields(line)
			if len(f) < 6 {
				return fmt.Errorf("short index line %q", line)
			}
			pCnt, err := strconv.Atoi(f[3])
			if err != nil {
				return err
			}
			offsets := f[4+pCnt+2:]
			for i, off := range offsets {
				if i >= *maxSenseRank {
					break
				}
				k := pos + off
				if rank[k] == nil {
					rank[k] = make(map[string]int)
				}
				rank[k][f[0]] = i + 1
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	related := make(map[string][]string)
	for _, pos := range wordnetPOS {
		if err := eachLine(filepath.Join(dir, "data."+pos), func(line string) error {
			f := strings.Fields(line)
			if len(f) < 5 {
				return fmt.Errorf("short data line %q", line)
			}
			n, err := strconv.ParseInt(f[3], 16, 32)
			if err != nil {
				return err
			}
			ranks := rank[pos+f[0]]
			var words []string
			for i := range int(n) {
				w := strings.ToLower(f[4+2*i])
				if j := strings.IndexByte(w, '('); j > 0 { // adjective markers: "galore(ip)"
					w = w[:j]
				}
				if ranks[w] > 0 && isPlainWord(w) {
					words = append(words, w)
				}
			}
			for _, a := range words {
				for _, b := range words {
					if a != b {
						key := stemOf(a)
						related[key] = append(related[key], b)
					}
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	table := make(map[string][]string, len(related))
	for key, words := range related {
		seen := map[string]bool{key: true}
		var kept []string
		for _, w := range words {
			if s := stemOf(w); !seen[s] {
				seen[s] = true
				kept = append(kept, w)
			}
		}
		if len(kept) > *maxEnglishRelated {
			kept = kept[:*maxEnglishRelated]
		}
		if len(kept) > 0 {
			table[key] = kept
		}
	}
	return table, nil
}

// isPlainWord reports whether w is one word of at least three ASCII
// letters: no phrase ("go_back"), no abbreviation ("a"), no number.
func isPlainWord(w string) bool {
	if len(w) < 3 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// stemOf is the keyword term of an English word.
func stemOf(w string) string {
	t := knowledge.Terms(w)
	if len(t) != 1 {
		return w
	}
	return t[0]
}

// eachLine calls fn with each line of a WordNet file, skipping its
// licence header (lines starting with two spaces).
func eachLine(path string, fn func(string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") || line == "" {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return sc.Err()
}
