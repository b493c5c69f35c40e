package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"merge", "rerank", "search", "rewrite"}
	for in, want := range map[string]string{"merg": "merge", "rerenk": "rerank", "serach": "search", "zzzzzz": ""} {
		if got := Closest(in, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
}
