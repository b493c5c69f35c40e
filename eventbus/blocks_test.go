package eventbus

import (
	"fmt"
	"slices"
	"testing"
)

// describe renders events as "origin|type:text-or-tool-id" for comparison.
func describe(evs []Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		s := string(ev.Type)
		if ev.Text != "" {
			s += ":" + ev.Text
		}
		if tc, ok := ev.Payload.(ToolCall); ok {
			s += ":" + tc.ToolCallID
		}
		for _, h := range slices.Backward(ev.Origin) {
			s = fmt.Sprintf("%s%d|", h.Agent, h.Index) + s
		}
		out[i] = s
	}
	return out
}

func TestOpenBlocksClosesWhatIsOpenByTheGuardsRules(t *testing.T) {
	sub1 := []Hop{{Agent: "sub", ID: "sub1", Index: 1}}
	sub2 := []Hop{{Agent: "sub", ID: "sub2", Index: 2}}
	nested := []Hop{{Agent: "sub", ID: "sub1", Index: 1}, {Agent: "sub", ID: "x", Index: 3}}
	tool := func(typ Type, id string, origin []Hop) Event {
		return Event{Type: typ, Payload: ToolCall{ToolCallID: id}, Origin: origin}
	}
	in := func(origin []Hop, evs ...Event) []Event {
		for i := range evs {
			evs[i].Origin = origin
		}
		return evs
	}
	cases := []struct {
		name string
		evs  []Event
		want []string
	}{
		{"nothing open", in(nil, Event{Type: TypeAnswerStart}, Delta(TypeAnswerDelta, "a"), Event{Type: TypeAnswerEnd}), nil},
		{"untagged thinking", in(nil, Event{Type: TypeThinkingStart}, Delta(TypeThinkingDelta, "hm")),
			[]string{"thinking.end"}},
		{"tagged thinking gets its closing tag", in(nil, Event{Type: TypeThinkingStart}, Delta(TypeThinkingDelta, "<think>hm"), Delta(TypeThinkingDelta, " more")),
			[]string{"thinking.delta:</think>", "thinking.end"}},
		{"a tag already closed is not closed twice", in(nil, Event{Type: TypeThinkingStart}, Delta(TypeThinkingDelta, "<think>hm"), Delta(TypeThinkingDelta, "</think>")),
			[]string{"thinking.end"}},
		{"a tag only counts in the block's first delta", in(nil, Event{Type: TypeThinkingStart}, Delta(TypeThinkingDelta, "hm"), Delta(TypeThinkingDelta, "<think>")),
			[]string{"thinking.end"}},
		{"thinking, answer, then tools in the order they started", []Event{
			tool(TypeToolCallStart, "t1", nil), tool(TypeToolCallStart, "t2", nil), tool(TypeToolCallStart, "t3", nil),
			tool(TypeToolCallEnd, "t2", nil), {Type: TypeAnswerStart}, {Type: TypeThinkingStart}, Delta(TypeThinkingDelta, "<think>x"),
		}, []string{"thinking.delta:</think>", "thinking.end", "answer.end", "tool_call.end:t1", "tool_call.end:t3"}},
		{"subagents apart, deepest first, main last", slices.Concat(
			in(nil, Event{Type: TypeAnswerStart}),
			in(sub1, Event{Type: TypeThinkingStart}, Delta(TypeThinkingDelta, "<think>a")),
			in(sub2, Event{Type: TypeAnswerStart}),
			in(nested, Event{Type: TypeAnswerStart}),
			[]Event{tool(TypeToolCallStart, "s2", sub2)},
		), []string{"sub1|sub3|answer.end", "sub1|thinking.delta:</think>", "sub1|thinking.end",
			"sub2|answer.end", "sub2|tool_call.end:s2", "answer.end"}},
		{"a subagent that closed its blocks adds nothing", slices.Concat(
			in(sub1, Event{Type: TypeThinkingStart}, Delta(TypeThinkingDelta, "<think>a"), Delta(TypeThinkingDelta, "</think>"), Event{Type: TypeThinkingEnd}),
			in(sub1, Event{Type: TypeAnswerStart}, Delta(TypeAnswerDelta, "x"), Event{Type: TypeAnswerEnd}),
		), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var o OpenBlocks
			for i := range c.evs {
				o.Track(&c.evs[i])
			}
			if got := describe(o.Close()); !slices.Equal(got, c.want) {
				t.Fatalf("closing = %q, want %q", got, c.want)
			}
			if again := o.Close(); len(again) != 0 {
				t.Fatalf("second Close = %q, want nothing: the blocks are closed", describe(again))
			}
		})
	}
}

// Tracking a stream's own events costs no allocation per token.
func TestOpenBlocksTrackDoesNotAllocatePerDelta(t *testing.T) {
	var o OpenBlocks
	sub := []Hop{{Agent: "sub", ID: "sub1", Index: 1}}
	start, subStart := Event{Type: TypeThinkingStart}, Event{Type: TypeAnswerStart, Origin: sub}
	o.Track(&start)
	o.Track(&subStart)
	d, subD := Delta(TypeThinkingDelta, "<think>x"), Event{Type: TypeAnswerDelta, Text: "y", Origin: sub}
	if n := testing.AllocsPerRun(100, func() { o.Track(&d); o.Track(&subD) }); n != 0 {
		t.Fatalf("%v allocations per tracked delta", n)
	}
}
