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

// A subagent's subagent adds its hop after its parent's; the parent keeps
// only its own answer text, and closes the blocks it left open.
func TestOriginEmitterNestsHopsAndClosesOpenBlocks(t *testing.T) {
	var got []eventbus.Event
	rec := eventbus.EmitterFunc(func(ev eventbus.Event) { got = append(got, ev) })
	st := &research{}
	outer := newOriginEmitter(rec, st, eventbus.Hop{Agent: AgentSub, ID: "sub1", Index: 1})
	inner := newOriginEmitter(outer, st, eventbus.Hop{Agent: AgentSub, ID: "sub2", Index: 2})
	inner.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, "inner"))
	outer.Emit(eventbus.Event{Type: eventbus.TypeAnswerStart})
	outer.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, "outer"))
	outer.Emit(eventbus.Of(eventbus.TypeToolCallStart, eventbus.ToolCall{ToolCallID: "c1", Name: "t"}))
	outer.closeOpen()

	if len(got[0].Origin) != 2 || got[0].Origin[0].ID != "sub1" || got[0].Origin[1].ID != "sub2" || got[0].Origin[1].Index != 2 {
		t.Fatalf("nested origin = %+v", got[0].Origin)
	}
	if text, _ := outer.result(); text != "outer" {
		t.Fatalf("outer answer = %q", text)
	}
	var tail []eventbus.Type
	for _, ev := range got[4:] {
		tail = append(tail, ev.Type)
		if len(ev.Origin) != 1 || ev.Origin[0].ID != "sub1" {
			t.Fatalf("closing event %s has origin %+v", ev.Type, ev.Origin)
		}
	}
	if !slices.Equal(tail, []eventbus.Type{eventbus.TypeAnswerEnd, eventbus.TypeToolCallEnd}) {
		t.Fatalf("closing events = %v", tail)
	}
}

// A sub-researcher cut off in the middle of tagged thinking (its budget,
// its timeout) ends it as every other ending does: "</think>" first.
func TestOriginEmitterClosesTaggedThinkingWithItsTag(t *testing.T) {
	var got []eventbus.Event
	rec := eventbus.EmitterFunc(func(ev eventbus.Event) { got = append(got, ev) })
	sub := newOriginEmitter(rec, &research{}, eventbus.Hop{Agent: AgentSub, ID: "sub1", Index: 1})
	sub.Emit(eventbus.Event{Type: eventbus.TypeThinkingStart})
	sub.Emit(eventbus.Delta(eventbus.TypeThinkingDelta, "<think>weighing"))
	sub.closeOpen()
	tail := got[2:]
	if len(tail) != 2 || tail[0].Type != eventbus.TypeThinkingDelta || tail[0].Text != "</think>" ||
		tail[1].Type != eventbus.TypeThinkingEnd {
		t.Fatalf("closing events = %+v, want </think> then thinking.end", tail)
	}
	for _, ev := range tail {
		if len(ev.Origin) != 1 || ev.Origin[0].ID != "sub1" {
			t.Fatalf("closing event %s has origin %+v", ev.Type, ev.Origin)
		}
	}
}
