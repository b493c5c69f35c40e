package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/tools"
)

// e2e_wait is a tool for these tests: it returns "done <key>" once the
// test opens the gate of its "key" argument, and reports that it started.
var (
	e2eGatesMu sync.Mutex
	e2eGates   = map[string]chan struct{}{}
)

func e2eGate(key string) chan struct{} {
	e2eGatesMu.Lock()
	defer e2eGatesMu.Unlock()
	if e2eGates[key] == nil {
		e2eGates[key] = make(chan struct{})
	}
	return e2eGates[key]
}

var e2eKeys atomic.Int64

// e2eKey is a gate key no other test (or run of a test) uses.
func e2eKey(name string) string { return fmt.Sprintf("%s-%d", name, e2eKeys.Add(1)) }

func openE2EGate(key string) {
	ch := e2eGate(key)
	e2eGatesMu.Lock()
	defer e2eGatesMu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

type e2eWait struct{}

func (e2eWait) Info() *schema.ToolInfo {
	return &schema.ToolInfo{Name: "e2e_wait", Desc: "Waits for the test.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{"key": {Type: schema.String, Required: true}})}
}

func (e2eWait) Run(ctx context.Context, _ *tools.Env, args string) (string, error) {
	var a struct{ Key string }
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return "", err
	}
	openE2EGate(a.Key + "-started")
	select {
	case <-e2eGate(a.Key):
		return "done " + a.Key, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func init() {
	tools.Register("e2e_wait", func(tools.Config) (tools.Tool, error) { return e2eWait{}, nil })
}

// agentMode makes agent the default mode, with agent_loop settings laid
// over the built-in ones.
func agentMode(settings map[string]any) func(*config.Config) {
	return func(c *config.Config) {
		c.DefaultMode = "agent"
		for k, v := range settings {
			c.Plugins["agent_loop"][k] = v
		}
	}
}

// summary lists the events as type@turn.tab (stage events as
// stage:name:status), to assert order and placement at once. Deltas are
// left out unless keepDeltas.
func summary(evs []event, keepDeltas bool) []string {
	var out []string
	for _, e := range evs {
		switch e.Type {
		case eventbus.TypeThinkingDelta, eventbus.TypeAnswerDelta, eventbus.TypeToolCallDelta:
			if !keepDeltas {
				continue
			}
		case eventbus.TypeStage:
			st := e.Payload.(eventbus.Stage)
			out = append(out, "stage:"+st.Name+":"+st.Status)
			continue
		}
		s := string(e.Type)
		if p := e.Placement; p != nil {
			s += fmt.Sprintf("@%d.%d", p.Turn, p.Tab)
		}
		out = append(out, s)
	}
	return out
}

func resultsOf(evs []event) []eventbus.ToolResult {
	var out []eventbus.ToolResult
	for _, e := range evs {
		if r, ok := e.Payload.(eventbus.ToolResult); ok {
			out = append(out, r)
		}
	}
	return out
}

// toolMessages lists a provider request's tool messages as id=content.
func toolMessages(body map[string]any) []string {
	var out []string
	for _, m := range body["messages"].([]any) {
		msg := m.(map[string]any)
		if msg["role"] == "tool" {
			out = append(out, fmt.Sprint(msg["tool_call_id"], "=", msg["content"]))
		}
	}
	return out
}

// A two-cycle agent answer over the real API: thinking and a streamed
// tool call, the search result, then the cited answer — in this exact
// order, every cycle event placed, the answer and references saved.
func TestAgentToolCallThenAnswerStreamsInOrderWithPlacements(t *testing.T) {
	h := newHarness(t, agentMode(nil))
	h.addDocument("Starter care", sourdough)
	h.provider.Enqueue(
		providertest.Script{Chunks: append(providertest.ReasoningContent("Let me look it up.", 2),
			append(providertest.ToolCall(0, "call_a", "knowledge_search", `{"query":"sourdough starter feeding"}`, 3),
				providertest.Chunk{FinishReason: "tool_calls"})...),
			Usage: &providertest.Usage{PromptTokens: 20, CompletionTokens: 5}},
		providertest.Script{Chunks: providertest.Answer("Feed it twice a day [1].", 3),
			Usage: &providertest.Usage{PromptTokens: 90, CompletionTokens: 8}},
	)
	session := h.createSession()
	s := h.ask(session, "How often do I feed my starter?")
	evs := s.all()
	checkSeqs(t, evs, 1)
	want := []string{
		"stream.started",
		"stage:load_history:started", "stage:load_history:finished",
		"stage:generate:started",
		"model_call.started@1.0",
		"thinking.start@1.0", "thinking.delta@1.0", "thinking.delta@1.0", "thinking.delta@1.0", "thinking.end@1.0",
		"tool_call.start@1.1", "tool_call.delta@1.1", "tool_call.delta@1.1", "tool_call.delta@1.1", "tool_call.end@1.1",
		"model_call.finished@1.0",
		"references@1.1", "tool_result@1.1",
		"model_call.started@2.0",
		"answer.start@2.0", "answer.delta@2.0", "answer.delta@2.0", "answer.delta@2.0", "answer.end@2.0",
		"model_call.finished@2.0",
		"usage", "stage:generate:finished", "stream.finished",
	}
	if got := summary(evs, true); !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("finished = %+v", fin)
	}
	var args strings.Builder
	for _, e := range evs {
		if e.Type == eventbus.TypeToolCallDelta {
			args.WriteString(e.Payload.(eventbus.ToolCall).Arguments)
		}
	}
	if args.String() != `{"query":"sourdough starter feeding"}` {
		t.Fatalf("argument fragments = %q", args.String())
	}
	res := resultsOf(evs)
	if len(res) != 1 || res[0].ToolCallID != "call_a" || res[0].Status != eventbus.ToolCompleted ||
		!strings.Contains(res[0].Output, "[1] Starter care") {
		t.Fatalf("tool results = %+v", res)
	}
	for _, e := range evs {
		if u, ok := e.Payload.(eventbus.Usage); ok && (u.PromptTokens != 110 || u.CompletionTokens != 13) {
			t.Fatalf("usage = %+v, want the sum of both calls", u)
		}
	}

	msg := h.message(session, s.messageID())
	if msg.Status != "completed" || msg.Content != "Feed it twice a day [1]." || msg.Thinking != "Let me look it up." ||
		len(msg.References) == 0 || msg.References[0].Title != "Starter care" {
		t.Fatalf("saved = %+v", msg)
	}
	reqs := h.provider.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d provider requests", len(reqs))
	}
	if got := toolMessages(reqs[1].Body); len(got) != 1 || !strings.HasPrefix(got[0], "call_a=1 passage found") {
		t.Fatalf("tool messages sent back = %v", got)
	}
}

// Two tools called at once finish out of order: the stream shows the
// fast one first, the next request has both results in call order, and
// each call has exactly one result.
func TestAgentParallelToolsStreamInCompletionOrderOverHTTP(t *testing.T) {
	h := newHarness(t, agentMode(map[string]any{"tools": []any{"e2e_wait"}}))
	slow, fast := e2eKey("slow"), e2eKey("fast")
	h.provider.Enqueue(
		providertest.Script{Chunks: append(providertest.ToolCall(0, "call_slow", "e2e_wait", `{"key":"`+slow+`"}`, 2),
			providertest.ToolCall(1, "call_fast", "e2e_wait", `{"key":"`+fast+`"}`, 2)...)},
		providertest.Script{Chunks: providertest.Answer("Both finished.", 2)},
	)
	openE2EGate(fast)
	s := h.ask(h.createSession(), "Run both.")
	first := s.until(isType(eventbus.TypeToolResult))
	if r := resultsOf(first); len(r) != 1 || r[0].ToolCallID != "call_fast" {
		t.Fatalf("first result = %+v", r)
	}
	openE2EGate(slow) // only now can the slow call finish
	evs := append(first, s.all()...)
	checkSeqs(t, evs, 1)
	var order []string
	for _, e := range evs {
		if r, ok := e.Payload.(eventbus.ToolResult); ok {
			order = append(order, fmt.Sprintf("%s@%d.%d", r.ToolCallID, e.Placement.Turn, e.Placement.Tab))
		}
	}
	if want := []string{"call_fast@1.2", "call_slow@1.1"}; !slices.Equal(order, want) {
		t.Fatalf("results streamed %v, want %v", order, want)
	}
	reqs := h.provider.Requests()
	if got, want := toolMessages(reqs[1].Body), []string{"call_slow=done " + slow, "call_fast=done " + fast}; !slices.Equal(got, want) {
		t.Fatalf("results sent back %v, want %v", got, want)
	}
	if text(evs, eventbus.TypeAnswerDelta) != "Both finished." || finished(t, evs).Status != eventbus.StatusCompleted {
		t.Fatalf("answer %q", text(evs, eventbus.TypeAnswerDelta))
	}
}

// At the cycle limit the model is offered no tools, so it answers.
func TestAgentLastCycleOffersNoToolsAndAnswers(t *testing.T) {
	h := newHarness(t, agentMode(map[string]any{"max_cycles": 2}))
	h.provider.Enqueue(
		providertest.Script{Chunks: providertest.ToolCall(0, "c1", "knowledge_search", `{"query":"anything"}`, 2)},
		providertest.Script{Chunks: providertest.Answer("Answer without more tools.", 2)},
	)
	evs := h.ask(h.createSession(), "Q").all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted || text(evs, eventbus.TypeAnswerDelta) != "Answer without more tools." {
		t.Fatalf("finished %+v answer %q", fin, text(evs, eventbus.TypeAnswerDelta))
	}
	reqs := h.provider.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if _, ok := reqs[0].Body["tools"]; !ok {
		t.Fatalf("the first call was offered no tools: %s", reqs[0].Raw)
	}
	for _, key := range []string{"tools", "tool_choice"} {
		if _, ok := reqs[1].Body[key]; ok {
			t.Fatalf("the last call carries %q: %s", key, reqs[1].Raw)
		}
	}
}

// A reader that drops in the middle of a streamed tool call resumes with
// no gap and no duplicate; a stop then aborts the provider, closes the
// call and ends the stream stopped.
func TestAgentResumeAndStopInTheMiddleOfAToolCall(t *testing.T) {
	h := newHarness(t, agentMode(nil))
	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.Enqueue(providertest.Script{
		Chunks: append(providertest.Content("Searching.", 1),
			providertest.ToolCall(0, "call_x", "knowledge_search", `{"query":"a long query to split"}`, 4)...),
		Hold: gate, HoldAfter: 3, // the call's id, name and two argument fragments are out
	})
	session := h.createSession()
	s := h.ask(session, "Q")
	if err := gate.WaitReached(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	// Read up to the second argument fragment, then drop the connection.
	before := s.until(isType(eventbus.TypeToolCallStart))
	for countTypes(before, eventbus.TypeToolCallDelta) < 2 {
		ev, ok := s.next()
		if !ok {
			t.Fatal("stream ended early")
		}
		before = append(before, ev)
	}
	s.close()
	last := before[len(before)-1]

	r := h.open("GET", "/api/v1/streams/"+s.messageID(), "", "Last-Event-ID", last.ID)
	if r.resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: %d", r.resp.StatusCode)
	}
	var stop struct{ Status string }
	if code := h.call("POST", "/api/v1/streams/"+s.messageID()+"/stop", "", &stop); code != http.StatusAccepted {
		t.Fatalf("stop: %d", code)
	}
	if err := h.provider.WaitAbort(ctxTimeout(t)); err != nil {
		t.Fatalf("the provider was not aborted: %v", err)
	}
	after := r.all()
	all := append(before, after...)
	checkSeqs(t, all, 1)
	if fin := finished(t, all); fin.Status != eventbus.StatusStopped {
		t.Fatalf("finished = %+v", fin)
	}
	ends := 0
	for _, e := range all {
		if e.Type == eventbus.TypeToolCallEnd && e.Payload.(eventbus.ToolCall).ToolCallID == "call_x" {
			ends++
		}
	}
	if ends != 1 {
		t.Fatalf("%d tool_call.end for the interrupted call: %v", ends, summary(all, false))
	}
	if len(h.provider.Requests()) != 1 {
		t.Fatal("the model was asked again after the stop")
	}
	h.waitDone(s.messageID())
	if msg := h.message(session, s.messageID()); msg.Status != "stopped" || msg.Content != "Searching." {
		t.Fatalf("saved = %+v", msg)
	}
}

// Stopping while a tool runs ends the call with a result and the answer
// stopped; the model is not asked again.
func TestAgentStopWhileAToolRuns(t *testing.T) {
	h := newHarness(t, agentMode(map[string]any{"tools": []any{"e2e_wait"}}))
	key := e2eKey("stop")
	h.provider.Enqueue(providertest.Script{Chunks: providertest.ToolCall(0, "call_w", "e2e_wait", `{"key":"`+key+`"}`, 2)})
	s := h.ask(h.createSession(), "Q")
	<-e2eGate(key + "-started")
	if code := h.call("POST", "/api/v1/streams/"+s.messageID()+"/stop", "", nil); code != http.StatusAccepted {
		t.Fatalf("stop: %d", code)
	}
	evs := s.all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusStopped {
		t.Fatalf("finished = %+v", fin)
	}
	if r := resultsOf(evs); len(r) != 1 || r[0].Status != eventbus.ToolFailed || r[0].Output != "the call was stopped" {
		t.Fatalf("results = %+v", r)
	}
	if len(h.provider.Requests()) != 1 {
		t.Fatal("the model was asked again after the stop")
	}
}

func countTypes(evs []event, t eventbus.Type) int {
	n := 0
	for _, e := range evs {
		if e.Type == t {
			n++
		}
	}
	return n
}
