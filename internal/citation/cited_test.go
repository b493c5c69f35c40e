package citation

import (
	"slices"
	"testing"
)

func TestCitedListsValidMarkersOnceInOrder(t *testing.T) {
	for _, tc := range []struct {
		text string
		max  int
		want []int
	}{
		{"WAL [2] and [1, 3]; again [2].", 3, []int{1, 2, 3}},
		{"out of range [4] and [0], list [1, 9]", 3, []int{1}},
		{"not markers: [a] [1 [2", 3, nil},
		{"no references [1]", 0, nil},
	} {
		if got := Cited(tc.text, tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("Cited(%q, %d) = %v, want %v", tc.text, tc.max, got, tc.want)
		}
	}
}
