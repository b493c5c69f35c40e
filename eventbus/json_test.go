package eventbus

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", " leading space", "quote\" backslash\\ slash/", "line\nbreak\r\ttab",
		"\x00\x01\x1f\x7f", "中文 emoji 🎉", "sep\u2028\u2029", "bad\xffutf8\xc3", "<think>&</think>",
	} {
		want, _ := json.Marshal(s)
		got := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s: not JSON: %v", s, got, err)
		}
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("AppendString(%q) decodes to %q, encoding/json gives %q", s, back, wantBack)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("hello \"world\"\n")
	f.Add("\xff\xfe中")
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("not JSON: %s: %v", got, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip %q -> %q", s, back)
		}
	})
}

func TestEventRoundTrip(t *testing.T) {
	events := []Event{
		{Type: TypeStreamStarted, Payload: StreamStarted{SessionID: "s", MessageID: "m", UserMessageID: "u", Mode: "chat"}},
		{Type: TypeStage, Payload: Stage{Name: "search", Status: StageFinished, ElapsedMS: 3, Detail: "5 hits"}},
		{Type: TypeQueryRewritten, Payload: QueryRewritten{Original: "it?", Rewritten: "what is it?"}},
		{Type: TypeReferences, Payload: References{Items: []Reference{{Index: 1, ChunkID: "c", DocumentID: "d", Title: "T", Content: "x", Score: 0.5}}}},
		{Type: TypeThinkingStart},
		{Type: TypeThinkingDelta, Text: "<think>hmm"},
		{Type: TypeAnswerDelta, Text: ""},
		{Type: TypeAnswerDelta, Text: " spaced \"quoted\"\n"},
		{Type: TypeAnswerEnd},
		{Type: TypeToolCallDelta, Payload: ToolCall{ToolCallID: "c1", Arguments: `{"q":`}},
		{Type: TypeToolResult, Payload: ToolResult{ToolCallID: "c1", Output: "ok", Status: "success"}},
		{Type: TypeToolCallApprovalRequest, Payload: ToolApproval{ToolCallID: "c1", Name: "t", Arguments: "{}", ExpiresAt: 9},
			Placement: &Placement{Turn: 1, Tab: 1}},
		{Type: TypeToolCallApprovalDecision, Payload: ToolApproval{ToolCallID: "c1", Decision: DecisionDeny, Reason: DecidedByTimeout}},
		{Type: TypeUsage, Payload: Usage{PromptTokens: 1, CompletionTokens: 2, ReasoningTokens: 3, TTFTMS: 4, TotalMS: 5}},
		{Type: TypeError, Payload: Error{Code: "provider_error", Message: "m", Stage: "generate", Retryable: true}},
		{Type: TypeStreamFinished, Payload: Finished{Status: StatusStopped, Reason: "user", MessageID: "m"}},
		{Type: TypeAnswerDelta, Text: "x", Placement: &Placement{Model: "a", Turn: 1, Tab: 2}},
		{Type: "custom.thing", Payload: Custom{Value: map[string]any{"k": "v"}}},
		{Type: TypeAnswerDelta, Text: "sub", Origin: []Hop{{Agent: "sub", ID: "s\"1", Index: 2}}},
		{Type: TypeToolResult, Payload: ToolResult{ToolCallID: "c1", Output: "ok", Status: "completed"},
			Placement: &Placement{Turn: 1, Tab: 1}, Origin: []Hop{{Agent: "sub", ID: "a", Index: 1}, {Agent: "sub", ID: "b", Index: 3}}},
		{Type: TypeResearchPlan, Payload: ResearchPlan{Questions: []string{"a?", "b?"}}, Origin: []Hop{{Agent: "plan"}}},
		{Type: TypeResearchPlan, Payload: ResearchPlan{Clarification: "which one?"}},
		{Type: TypeResearchSubagent, Payload: ResearchSubagent{Question: "a?", Status: "finished", Detail: "d", References: 2},
			Origin: []Hop{{Agent: "sub", ID: "x", Index: 1}}},
		{Type: "custom.nested", Payload: Custom{Value: map[string]any{"k": "v"}}, Origin: []Hop{{Agent: "sub", Index: 1}}},
	}
	for i, ev := range events {
		ev.Seq, ev.StreamID, ev.Time = int64(i+1), "stream-1", 1700000000000
		data, err := AppendJSON(nil, &ev)
		if err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatalf("%s: not a JSON object: %s", ev.Type, data)
		}
		if obj["type"] != string(ev.Type) || obj["seq"] != float64(ev.Seq) || obj["stream_id"] != "stream-1" {
			t.Errorf("%s: envelope wrong: %s", ev.Type, data)
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatalf("%s: decode: %v", ev.Type, err)
		}
		if !reflect.DeepEqual(got, ev) {
			t.Errorf("%s: round trip\n got %#v\nwant %#v", ev.Type, got, ev)
		}
	}
}

func TestDeltaAlwaysCarriesContent(t *testing.T) {
	ev := Event{Type: TypeAnswerDelta, Seq: 1}
	data, _ := AppendJSON(nil, &ev)
	var obj map[string]any
	_ = json.Unmarshal(data, &obj)
	if _, ok := obj["content"]; !ok {
		t.Fatalf("answer.delta without content field: %s", data)
	}
}

// The origin chain is written exactly as the wire contract shows it, and
// only when there is one.
func TestOriginEncoding(t *testing.T) {
	ev := Event{Type: TypeAnswerDelta, Seq: 3, StreamID: "s", Text: "x",
		Origin: []Hop{{Agent: "sub", ID: "r1", Index: 2}, {Agent: "plan"}}}
	data, _ := AppendJSON(nil, &ev)
	want := `{"seq":3,"type":"answer.delta","stream_id":"s","ts":0,"origin":[{"agent":"sub","id":"r1","index":2},{"agent":"plan"}],"content":"x"}`
	if string(data) != want {
		t.Fatalf("got  %s\nwant %s", data, want)
	}
	ev.Origin = nil
	if data, _ := AppendJSON(nil, &ev); strings.Contains(string(data), "origin") {
		t.Fatalf("an event without origin names one: %s", data)
	}
}

func TestCustomPayloadMustBeObject(t *testing.T) {
	ev := Event{Type: "x", Payload: Custom{Value: []int{1}}}
	if _, err := AppendJSON(nil, &ev); err == nil {
		t.Fatal("a payload that is not an object was accepted")
	}
}

func BenchmarkAppendJSONDelta(b *testing.B) {
	ev := Event{Type: TypeAnswerDelta, Seq: 12345, StreamID: "0195f0c2-7a4e-7b61-9d0a-3c4f5e6a7b8c", Time: 1700000000000, Text: " the quick brown fox"}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendJSON(buf[:0], &ev)
	}
}
