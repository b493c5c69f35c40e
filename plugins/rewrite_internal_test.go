package plugins

import (
	"strings"
	"testing"
)

func TestParseRewriteIsTolerant(t *testing.T) {
	t.Parallel()
	const original = "and how do I stop it?"
	for _, tc := range []struct {
		name, reply, want, why string
	}{
		{"plain", "How do I stop a chatpipe stream?", "How do I stop a chatpipe stream?", ""},
		{"think block", "<think>The user means the stream.</think>\nHow do I stop a stream?", "How do I stop a stream?", ""},
		{"closing tag only", "reasoning without its opening tag</think>How do I stop a stream?", "How do I stop a stream?", ""},
		{"label and quotes", `Rewritten question: "How do I stop a stream?"`, "How do I stop a stream?", ""},
		{"bold label", "**Standalone question:** How do I stop a stream?", "How do I stop a stream?", ""},
		{"label on its own line", "Rewritten question:\n\n  'How do I stop a stream?'\nExplanation: …", "How do I stop a stream?", ""},
		{"chinese label", "改写后的问题：如何停止一个流？", "如何停止一个流？", ""},
		{"chinese quotes", "「如何停止一个流？」", "如何停止一个流？", ""},
		{"empty", "   \n", "", "no question"},
		{"unclosed think", "<think>I am still thinking about", "", "no question"},
		{"overlong", strings.Repeat("word ", 100), "", "too long"},
		{"refusal", "I'm sorry, but I can't rewrite that.", "", "answered instead"},
		{"demo answer", "[demo model] This answer comes from chatpipe's demo.", "", "answered instead"},
		{"prompt echoed", "Latest question: {question}", "", "echoed the prompt"},
	} {
		got, why := parseRewrite(tc.reply, original)
		if got != tc.want || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("%s: parseRewrite(%q) = %q, %q; want %q, %q", tc.name, tc.reply, got, why, tc.want, tc.why)
		}
	}
}
