package citation

import (
	"strings"
	"testing"
)

// run feeds pieces through a Filter for max references and returns the
// pieces it passed on.
func run(max int, pieces ...string) []string {
	var out []string
	f := NewFilter(max, func(s string) { out = append(out, s) })
	for _, p := range pieces {
		f.Write(p)
	}
	f.Flush()
	return out
}

var filterCases = []struct {
	name, in, want string
}{
	{"plain text", "no markers here", "no markers here"},
	{"valid markers kept", "Run it [1]. Resume it [2][3].", "Run it [1]. Resume it [2][3]."},
	{"out of range removed", "Run it [4]. Zero [0] too.", "Run it . Zero  too."},
	{"mixed neighbours", "See [2][7][1].", "See [2][1]."},
	{"list keeps valid numbers", "See [1, 5, 3] and [2,9].", "See [1, 3] and [2]."},
	{"list of invalid numbers removed", "See [5, 6].", "See ."},
	{"list of valid numbers kept verbatim", "See [1,2, 3].", "See [1,2, 3]."},
	{"bracket in normal text released", "an array [a, b] and [ 1 ] and [x", "an array [a, b] and [ 1 ] and [x"},
	{"markdown link", "[docs](https://example.com) [1]", "[docs](https://example.com) [1]"},
	{"trailing partial released at the end", "ends with [1", "ends with [1"},
	{"trailing bracket released", "ends with [", "ends with ["},
	{"unfinished list released", "ends with [1, ", "ends with [1, "},
	{"too many digits is not a marker", "[1234567] stays", "[1234567] stays"},
	{"six digits out of range removed", "[123456] goes", " goes"},
	{"leading zero counts", "[01] stays", "[01] stays"},
	{"code index out of range removed", "x[0] and y[3]", "x and y[3]"},
	{"chinese", "可以恢复流[1]。也见[8]。", "可以恢复流[1]。也见。"},
	{"bracket runs", "[[1]] [[9]]", "[[1]] []"},
	{"overlong list is text", "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 9]", "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 9]"},
}

func TestFilterRemovesMarkersOfMissingReferencesAtEverySplit(t *testing.T) {
	t.Parallel()
	for _, tc := range filterCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check := func(pieces ...string) {
				t.Helper()
				out := run(3, pieces...)
				if got := strings.Join(out, ""); got != tc.want {
					t.Fatalf("pieces %q: got %q, want %q", pieces, got, tc.want)
				}
				for _, o := range out {
					if o == "" {
						t.Fatalf("pieces %q: an empty piece was passed on", pieces)
					}
				}
			}
			check(tc.in)
			for i := 0; i <= len(tc.in); i++ {
				check(tc.in[:i], tc.in[i:])
				for j := i; j <= len(tc.in); j++ {
					check(tc.in[:i], tc.in[i:j], tc.in[j:])
				}
			}
			// One byte at a time.
			var bytes []string
			for i := range len(tc.in) {
				bytes = append(bytes, tc.in[i:i+1])
			}
			check(bytes...)
		})
	}
}

func TestFilterHoldsBackOnlyAPossibleMarker(t *testing.T) {
	t.Parallel()
	var out []string
	f := NewFilter(3, func(s string) { out = append(out, s) })
	f.Write("The answer is here [")
	if got := strings.Join(out, ""); got != "The answer is here " {
		t.Fatalf("after a trailing '[' the filter passed %q, want everything before it", got)
	}
	f.Write("1")
	f.Write("2")
	if got := strings.Join(out, ""); got != "The answer is here " {
		t.Fatalf("the filter released %q while [12 could still be a marker", got)
	}
	f.Write("a")
	if got := strings.Join(out, ""); got != "The answer is here [12a" {
		t.Fatalf("got %q: [12a cannot be a marker and must be released at once", got)
	}
}

func TestFilterWithNoReferencesRemovesEveryMarker(t *testing.T) {
	t.Parallel()
	if got := strings.Join(run(0, "Nothing found [1], general knowledge [2]."), ""); got != "Nothing found , general knowledge ." {
		t.Fatalf("got %q", got)
	}
}

func BenchmarkFilterPlainDelta(b *testing.B) {
	f := NewFilter(5, func(string) {})
	b.ReportAllocs()
	for b.Loop() {
		f.Write(" token")
	}
}

func BenchmarkFilterDeltaWithValidMarker(b *testing.B) {
	f := NewFilter(5, func(string) {})
	b.ReportAllocs()
	for b.Loop() {
		f.Write(" cited [2] token")
	}
}
