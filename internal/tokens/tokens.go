// Package tokens estimates how many model tokens a text costs, without a
// model-specific tokenizer: budgets (history, context) only need a close,
// conservative figure that works for English and for Chinese alike.
package tokens

import "unicode/utf8"

// Estimate returns an approximate token count for s: about four ASCII
// characters per token, and one token per non-ASCII character (CJK text
// runs at roughly one to one and a half tokens per character in common
// tokenizers, so this errs on the side of fewer characters per budget).
func Estimate(s string) int {
	ascii, other := 0, 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			ascii++
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		other++
		i += size
	}
	return (ascii+3)/4 + other
}
