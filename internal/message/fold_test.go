package message

import (
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ev(t eventbus.Type, p eventbus.Payload) eventbus.Event { return eventbus.Of(t, p) }
func text(t eventbus.Type, s string) eventbus.Event         { return eventbus.Delta(t, s) }
func mark(t eventbus.Type) eventbus.Event                   { return eventbus.Event{Type: t} }

func sub(e eventbus.Event) eventbus.Event {
	e.Origin = []eventbus.Hop{{Agent: "sub", ID: "sub1", Index: 1}}
	return e
}

func placed(model string, e eventbus.Event) eventbus.Event {
	e.Placement = &eventbus.Placement{Model: model}
	return e
}

func finished(status string) eventbus.Event {
	return ev(eventbus.TypeStreamFinished, eventbus.Finished{Status: status, MessageID: "m1"})
}

func attempt(n int) eventbus.Event {
	return ev(eventbus.TypeModelCallStarted, eventbus.ModelCall{Attempt: n})
}

func attemptEnd(n int, committed bool) eventbus.Event {
	return ev(eventbus.TypeModelCallFinished, eventbus.ModelCall{Attempt: n}.Finished(eventbus.ModelCallFailed, committed))
}

// want is what a fold's message should read.
type want struct {
	content, thinking, inline string
	status, reason, errMsg    string
	refs                      int
	usage                     *eventbus.Usage
}

func TestFoldBuildsTheMessage(t *testing.T) {
	refs := func(n int) eventbus.Event {
		items := make([]eventbus.Reference, n)
		for i := range items {
			items[i] = eventbus.Reference{Index: i + 1, ChunkID: "c"}
		}
		return ev(eventbus.TypeReferences, eventbus.References{Items: items})
	}
	usage := eventbus.Usage{PromptTokens: 10, CompletionTokens: 4, Estimated: true}
	cases := []struct {
		name   string
		model  string
		inline bool
		events []eventbus.Event
		want   want
	}{{
		name: "answer deltas concatenate",
		events: []eventbus.Event{mark(eventbus.TypeAnswerStart), text(eventbus.TypeAnswerDelta, "Hello "),
			text(eventbus.TypeAnswerDelta, "world"), mark(eventbus.TypeAnswerEnd), finished(eventbus.StatusCompleted)},
		want: want{content: "Hello world", status: eventbus.StatusCompleted},
	}, {
		name: "thinking loses chatpipe's think tags",
		events: []eventbus.Event{mark(eventbus.TypeThinkingStart), text(eventbus.TypeThinkingDelta, "<think>hmm"),
			text(eventbus.TypeThinkingDelta, " ok"), text(eventbus.TypeThinkingDelta, "</think>"), mark(eventbus.TypeThinkingEnd),
			text(eventbus.TypeAnswerDelta, "A")},
		want: want{content: "A", thinking: "hmm ok"},
	}, {
		name: "untagged thinking is kept as sent",
		events: []eventbus.Event{mark(eventbus.TypeThinkingStart), text(eventbus.TypeThinkingDelta, "plain"),
			mark(eventbus.TypeThinkingEnd)},
		want: want{thinking: "plain"},
	}, {
		name:   "inline thinking is wrapped where it came",
		inline: true,
		events: []eventbus.Event{mark(eventbus.TypeThinkingStart), text(eventbus.TypeThinkingDelta, "<think>t1"),
			text(eventbus.TypeThinkingDelta, "</think>"), mark(eventbus.TypeThinkingEnd), text(eventbus.TypeAnswerDelta, "a1"),
			mark(eventbus.TypeThinkingStart), text(eventbus.TypeThinkingDelta, "t2"), text(eventbus.TypeAnswerDelta, "a2"),
			mark(eventbus.TypeThinkingStart), text(eventbus.TypeThinkingDelta, "t3"), finished(eventbus.StatusStopped)},
		want: want{content: "a1a2", thinking: "t1t2t3", inline: "<think>t1</think>a1<think>t2</think>a2<think>t3</think>",
			status: eventbus.StatusStopped},
	}, {
		name: "a withdrawn attempt's text is dropped, a committed one's kept",
		events: []eventbus.Event{attempt(1), text(eventbus.TypeAnswerDelta, "keep "), attemptEnd(1, true),
			attempt(2), mark(eventbus.TypeThinkingStart), text(eventbus.TypeThinkingDelta, "lost thought"),
			text(eventbus.TypeAnswerDelta, "lost"), attemptEnd(2, false),
			attempt(3), text(eventbus.TypeAnswerDelta, "this"), attemptEnd(3, true)},
		want: want{content: "keep this"},
	}, {
		name:   "a withdrawn attempt's inline text and open tag are dropped",
		inline: true,
		events: []eventbus.Event{text(eventbus.TypeAnswerDelta, "a "), attempt(1), mark(eventbus.TypeThinkingStart),
			text(eventbus.TypeThinkingDelta, "x"), attemptEnd(1, false), attempt(2), text(eventbus.TypeAnswerDelta, "b")},
		want: want{content: "a b", inline: "a b"},
	}, {
		name: "events with an origin are not the message",
		events: []eventbus.Event{sub(text(eventbus.TypeAnswerDelta, "sub says")), sub(refs(3)), sub(ev(eventbus.TypeError,
			eventbus.Error{Message: "sub failed"})), text(eventbus.TypeAnswerDelta, "report"), refs(1),
			sub(finished(eventbus.StatusFailed)), finished(eventbus.StatusCompleted)},
		want: want{content: "report", refs: 1, status: eventbus.StatusCompleted},
	}, {
		name:  "with a model, only its events",
		model: "b",
		events: []eventbus.Event{placed("a", text(eventbus.TypeAnswerDelta, "from a")), placed("b", text(eventbus.TypeAnswerDelta, "from b")),
			text(eventbus.TypeAnswerDelta, "unplaced"), placed("b", refs(2))},
		want: want{content: "from b", refs: 2},
	}, {
		name: "last references and usage, first error",
		events: []eventbus.Event{refs(3), refs(2), ev(eventbus.TypeUsage, eventbus.Usage{PromptTokens: 1}), ev(eventbus.TypeUsage, usage),
			ev(eventbus.TypeError, eventbus.Error{Code: "provider_error", Message: "first"}),
			ev(eventbus.TypeError, eventbus.Error{Code: "save_failed", Message: "second"}),
			ev(eventbus.TypeStreamFinished, eventbus.Finished{Status: eventbus.StatusFailed, Reason: "provider_error"})},
		want: want{refs: 2, usage: &usage, errMsg: "first", status: eventbus.StatusFailed, reason: "provider_error"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := Fold{Model: tc.model, InlineThinking: tc.inline}
			for _, e := range tc.events {
				f.Add(&e)
			}
			got := want{content: f.Content(), thinking: f.Thinking(), inline: f.Inline(), status: f.Status(),
				reason: f.Reason(), errMsg: f.ErrorMessage(), refs: len(f.References()), usage: f.Usage()}
			if got.usage != nil && tc.want.usage != nil && *got.usage == *tc.want.usage {
				got.usage = tc.want.usage
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestFoldAddReportsWhatChanged(t *testing.T) {
	var f Fold
	steps := []struct {
		ev   eventbus.Event
		want Added
	}{
		{mark(eventbus.TypeThinkingStart), Added{}},
		{text(eventbus.TypeThinkingDelta, "<think>why"), Added{Text: "why", Thinking: true}},
		{text(eventbus.TypeThinkingDelta, "</think>"), Added{}},
		{text(eventbus.TypeAnswerDelta, "because"), Added{Text: "because"}},
		{attempt(2), Added{}},
		{attemptEnd(2, false), Added{Withdrawn: true}},
		{sub(text(eventbus.TypeAnswerDelta, "x")), Added{}},
	}
	for i, s := range steps {
		if got := f.Add(&s.ev); got != s.want {
			t.Errorf("step %d (%s): Add = %+v, want %+v", i, s.ev.Type, got, s.want)
		}
	}
	inline := Fold{InlineThinking: true}
	var sent string
	for _, e := range []eventbus.Event{mark(eventbus.TypeThinkingStart), text(eventbus.TypeThinkingDelta, "<think>t"),
		text(eventbus.TypeThinkingDelta, "</think>"), text(eventbus.TypeAnswerDelta, "a"), mark(eventbus.TypeThinkingStart),
		text(eventbus.TypeThinkingDelta, "u"), mark(eventbus.TypeThinkingEnd), finished(eventbus.StatusCompleted)} {
		a := inline.Add(&e)
		if a.Thinking {
			t.Fatalf("inline fold reported thinking text %q", a.Text)
		}
		sent += a.Text
	}
	if sent != inline.Inline() || sent != "<think>t</think>a<think>u</think>" {
		t.Errorf("inline pieces %q, Inline %q", sent, inline.Inline())
	}
}

func TestFoldFinalRecordsToolCallsStagesAndCitations(t *testing.T) {
	now := time.Unix(100, 0)
	f := Fold{Now: func() time.Time { return now }}
	turn := &eventbus.Placement{Turn: 2}
	events := []eventbus.Event{
		ev(eventbus.TypeStage, eventbus.Stage{Name: "search", Status: eventbus.StageStarted}),
		ev(eventbus.TypeStage, eventbus.Stage{Name: "search", Status: eventbus.StageFinished, ElapsedMS: 12, Detail: "3 hits"}),
		{Type: eventbus.TypeToolCallStart, Placement: turn, Payload: eventbus.ToolCall{ToolCallID: "t1", Name: "knowledge_search"}},
		ev(eventbus.TypeToolCallEnd, eventbus.ToolCall{ToolCallID: "t1", Arguments: `{"query":"q"}`}),
		ev(eventbus.TypeToolCallStart, eventbus.ToolCall{ToolCallID: "t2", Name: "fetch_document"}),
		ev(eventbus.TypeReferences, eventbus.References{Items: []eventbus.Reference{{Index: 1}, {Index: 2}}}),
		text(eventbus.TypeAnswerDelta, "See [2] and [7]."),
		ev(eventbus.TypeError, eventbus.Error{Message: "boom"}),
	}
	for i := range events {
		if i == 4 {
			now = now.Add(250 * time.Millisecond)
			f.Add(new(ev(eventbus.TypeToolResult, eventbus.ToolResult{ToolCallID: "t1", Output: "passages", Status: eventbus.ToolCompleted})))
		}
		f.Add(&events[i])
	}
	got := f.Final(history.StatusCompleted)
	if got.Error != "" {
		t.Errorf("a completed answer saved error %q", got.Error)
	}
	if f.Final(history.StatusFailed).Error != "boom" {
		t.Errorf("a failed answer did not save its first error")
	}
	wantCalls := []history.ToolCall{
		{ID: "t1", Name: "knowledge_search", Arguments: `{"query":"q"}`, Turn: 2, Output: "passages", Status: eventbus.ToolCompleted, DurationMS: 250},
		{ID: "t2", Name: "fetch_document"},
	}
	if !slices.Equal(got.Record.ToolCalls, wantCalls) {
		t.Errorf("tool calls %+v\nwant %+v", got.Record.ToolCalls, wantCalls)
	}
	wantStages := []history.StageTiming{{Name: "search", Status: eventbus.StageFinished, ElapsedMS: 12, Detail: "3 hits"}}
	if !slices.Equal(got.Record.Stages, wantStages) {
		t.Errorf("stages %+v, want %+v", got.Record.Stages, wantStages)
	}
	if !slices.Equal(got.Record.Cited, []int{2}) {
		t.Errorf("cited %v, want [2] (7 is past the references)", got.Record.Cited)
	}
	if got.Content != "See [2] and [7]." || len(got.References) != 2 {
		t.Errorf("final = %+v", got)
	}
}

func TestFoldStartedKeepsTheMessageIDAndTime(t *testing.T) {
	var f Fold
	e := ev(eventbus.TypeStreamStarted, eventbus.StreamStarted{MessageID: "m1", Mode: "rag"})
	e.Time = 1700000000000
	f.Add(&e)
	started, at := f.Started()
	if started == nil || started.MessageID != "m1" || at != 1700000000000 {
		t.Fatalf("Started() = %+v, %d", started, at)
	}
}
