package citation

import "testing"

func TestRenumberMapsEveryMarkerAndDropsUnknownNumbers(t *testing.T) {
	to := func(n int) int { return map[int]int{1: 4, 2: 7}[n] }
	for in, want := range map[string]string{
		"A [1] and B [2].":     "A [4] and B [7].",
		"Both [1, 2] here.":    "Both [4][7] here.",
		"Unknown [9] dropped.": "Unknown  dropped.",
		"Mixed [2,9].":         "Mixed [7].",
		"Not a marker [x] [].": "Not a marker [x] [].",
		"[1][2]":               "[4][7]",
	} {
		if got := Renumber(in, to); got != want {
			t.Errorf("Renumber(%q) = %q, want %q", in, got, want)
		}
	}
}
