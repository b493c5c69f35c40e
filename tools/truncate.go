package tools

import (
	"fmt"
	"unicode/utf8"
)

// Truncate bounds a tool's output (or an MCP result) to at most maxChars
// characters, saying at the cut how much there was, so the model knows
// the text is incomplete. maxChars of 0 or less means no bound.
func Truncate(s string, maxChars int) string {
	if maxChars <= 0 || len(s) <= maxChars {
		return s
	}
	total := utf8.RuneCountInString(s)
	if total <= maxChars {
		return s
	}
	cut := 0
	for range maxChars {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	return s[:cut] + fmt.Sprintf("\n… (cut at %d of %d characters)", maxChars, total)
}
