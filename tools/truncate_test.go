package tools_test

import (
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/tools"
)

func TestTruncateCutsAtCharactersAndSaysHowMuchThereWas(t *testing.T) {
	cases := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"anything", 0, "anything"},
		{"abcdef", 3, "abc\n… (cut at 3 of 6 characters)"},
		{"检索增强生成", 2, "检索\n… (cut at 2 of 6 characters)"},
		{"检索", 2, "检索"}, // 6 bytes but 2 characters: not cut
	}
	for _, c := range cases {
		if got := tools.Truncate(c.in, c.max); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
	if got := tools.Truncate(strings.Repeat("x", 5000), 1000); len(got) > 1100 {
		t.Errorf("a 5000-character output cut to 1000 is %d bytes", len(got))
	}
}
