package citation

import (
	"slices"
	"strconv"
	"strings"
)

// Cited returns the passage numbers in 1..max that text cites with
// markers "[n]" or "[n, m, …]" (the markers a Filter lets through),
// ascending and each once.
func Cited(text string, max int) []int {
	var out []int
	for i := 0; i < len(text); {
		k := strings.IndexByte(text[i:], '[')
		if k < 0 {
			break
		}
		at := i + k
		size, v := scan(text[at:], max)
		if v != keep && v != rewrite {
			i = at + 1
			continue
		}
		for part := range strings.SplitSeq(text[at+1:at+size-1], ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(part)); err == nil && n >= 1 && n <= max {
				out = append(out, n)
			}
		}
		i = at + size
	}
	slices.Sort(out)
	return slices.Compact(out)
}
