package citation

import (
	"regexp"
	"strconv"
	"strings"
)

// markerRE matches a citation marker: [n] or a list [n, m].
var markerRE = regexp.MustCompile(`\[(\d{1,4}(?:\s*,\s*\d{1,4})*)\]`)

// Renumber rewrites the citation markers of text with to: each number n
// becomes to(n); a number to maps to 0 or less is dropped, and a marker
// left with no number is removed. Text written against one numbering of
// passages (a sub-researcher's) is thus carried into another (the union
// a report cites).
func Renumber(text string, to func(n int) int) string {
	return markerRE.ReplaceAllStringFunc(text, func(m string) string {
		parts := strings.Split(m[1:len(m)-1], ",")
		out := make([]string, 0, len(parts))
		for _, p := range parts {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				continue
			}
			if g := to(n); g > 0 {
				out = append(out, "["+strconv.Itoa(g)+"]")
			}
		}
		return strings.Join(out, "")
	})
}
