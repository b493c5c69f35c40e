package plugins

import (
	"slices"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/tokens"
)

func TestParsePlanReadsNumberedOrBulletedLinesAndCapsThem(t *testing.T) {
	for _, tc := range []struct {
		reply string
		max   int
		want  []string
	}{
		{"1. A?\n2) B?\n3: C?", 6, []string{"A?", "B?", "C?"}},
		{"Here is the plan:\n- A?\n* B?\n\n• C?", 6, []string{"A?", "B?", "C?"}},
		{"A?\nB?", 6, []string{"A?", "B?"}},
		{"1. A\n2. B\n3. C\n4. D", 3, []string{"A", "B", "C"}},
		{"   \n", 6, nil},
	} {
		if got := parsePlan(tc.reply, tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("parsePlan(%q) = %q, want %q", tc.reply, got, tc.want)
		}
	}
}

// Findings over budget are shortened, the longest first: a short one is
// kept whole and the total fits.
func TestCompactKeepsShortFindingsAndFitsTheBudget(t *testing.T) {
	short := "Short finding [1]."
	long := strings.Repeat("a long finding word ", 400)
	out := compact([]string{long, short, long}, 300)
	if out[1] != short {
		t.Fatalf("the short finding was changed: %q", out[1])
	}
	total := 0
	for _, s := range out {
		total += tokens.Estimate(s)
	}
	if total > 300+2*tokens.Estimate(" … (shortened)") || !strings.HasSuffix(out[0], "(shortened)") {
		t.Fatalf("compacted to %d tokens: %q", total, out[0][:80])
	}
	if same := compact([]string{short}, 300); same[0] != short {
		t.Fatal("a finding within budget was changed")
	}
}

// The union numbers a passage found by two sub-researchers once, and each
// finding's citations follow it.
func TestCompileUnitesReferencesUnderOneNumbering(t *testing.T) {
	a := eventbus.Reference{Index: 1, ChunkID: "a", DocumentID: "d1", Content: "A"}
	b := eventbus.Reference{Index: 1, ChunkID: "b", DocumentID: "d2", Content: "B"}
	shared := eventbus.Reference{Index: 2, ChunkID: "a", DocumentID: "d1", Content: "A"}
	c := compile([]finding{
		{text: "One [1].", refs: []eventbus.Reference{a}},
		{failure: "boom"},
		{text: "Two [1], also [2], not [3].", refs: []eventbus.Reference{b, shared}},
	})
	if len(c.refs) != 2 || c.refs[1].ChunkID != "b" || c.refs[1].Index != 2 {
		t.Fatalf("union = %+v", c.refs)
	}
	if want := []string{"One [1].", "", "Two [2], also [1], not ."}; !slices.Equal(c.texts, want) {
		t.Fatalf("texts = %q, want %q", c.texts, want)
	}
}
