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
	var c Counter
	c.Add(s)
	return c.Tokens()
}

// Counter estimates the tokens of text that arrives in pieces (a streamed
// answer) as Estimate would for the whole: pieces are counted, not kept,
// and a piece boundary does not round up.
type Counter struct{ ascii, other int }

// Add counts s.
func (c *Counter) Add(s string) {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			c.ascii++
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		c.other++
		i += size
	}
}

// Tokens is the estimate for everything added so far.
func (c *Counter) Tokens() int { return (c.ascii+3)/4 + c.other }
