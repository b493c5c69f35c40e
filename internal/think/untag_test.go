package think

import "testing"

func TestUntagTakesOffTheWireTagsOnly(t *testing.T) {
	type step struct {
		start bool
		delta string
	}
	cases := []struct {
		name  string
		steps []step
		want  string
	}{
		{"tagged block", []step{{start: true}, {delta: "<think>a"}, {delta: "b"}, {delta: "</think>"}}, "ab"},
		{"untagged block keeps a literal tag", []step{{start: true}, {delta: "a "}, {delta: "</think>"}}, "a </think>"},
		{"two tagged blocks", []step{{start: true}, {delta: "<think>x"}, {delta: "</think>"}, {start: true}, {delta: "<think>y"}, {delta: "</think>"}}, "xy"},
		{"tag alone in its own delta", []step{{start: true}, {delta: "<think>"}, {delta: "z"}, {delta: "</think>"}}, "z"},
	}
	for _, c := range cases {
		var u Untag
		got := ""
		for _, s := range c.steps {
			if s.start {
				u.Start()
				continue
			}
			got += u.Delta(s.delta)
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestStripSavedCleansThinkingSavedWithTags(t *testing.T) {
	for in, want := range map[string]string{
		"<think>a</think>":                 "a",
		"<think>a</think><think>b</think>": "ab",
		"<think>cut short":                 "cut short",
		"clean, mentions </think>":         "clean, mentions </think>",
		"":                                 "",
	} {
		if got := StripSaved(in); got != want {
			t.Errorf("StripSaved(%q) = %q, want %q", in, got, want)
		}
	}
}
