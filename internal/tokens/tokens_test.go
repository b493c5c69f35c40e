package tokens

import "testing"

func TestEstimate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abcd", 1},
		{"abcde", 2},
		{"你好世界", 4},
		{"hi 你好", 3},
	} {
		if got := Estimate(tc.in); got != tc.want {
			t.Errorf("Estimate(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
