package think

import "strings"

// StripBlocks removes <think>…</think> blocks. An unclosed <think> hides
// everything after it; a </think> without an opening tag (providers that
// drop it) hides everything before it.
func StripBlocks(s string) string {
	if i := strings.LastIndex(s, closeTag); i >= 0 && !strings.Contains(s[:i], openTag) {
		s = s[i+len(closeTag):]
	}
	for {
		i := strings.Index(s, openTag)
		if i < 0 {
			return s
		}
		j := strings.Index(s[i:], closeTag)
		if j < 0 {
			return s[:i]
		}
		s = s[:i] + s[i+j+len(closeTag):]
	}
}
