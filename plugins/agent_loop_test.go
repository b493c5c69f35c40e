package plugins_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
	"github.com/chatpipe/chatpipe/tools"
)

// Tools for the tests, registered once: test_wait returns its "key" when
// the test opens the key's gate; test_fail errors; test_panic panics;
// test_hang waits for its context.
var (
	gatesMu sync.Mutex
	gates   = map[string]chan struct{}{}
)

func gate(key string) chan struct{} {
	gatesMu.Lock()
	defer gatesMu.Unlock()
	if gates[key] == nil {
		gates[key] = make(chan struct{})
	}
	return gates[key]
}

// openGate opens the gate of key (once; opening it again does nothing).
func openGate(key string) {
	ch := gate(key)
	gatesMu.Lock()
	defer gatesMu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

var keySeq atomic.Int64

// uniqueKey is a gate key no other test (or run of a test) uses.
func uniqueKey(name string) string { return fmt.Sprintf("%s-%d", name, keySeq.Add(1)) }

// argKey reads the "key" argument of the test tools.
func argKey(args string) string {
	return strings.Trim(strings.TrimPrefix(strings.TrimSuffix(args, "}"), `{"key":`), `"`)
}

type testTool struct {
	name string
	run  func(ctx context.Context, args string) (string, error)
}

func (t testTool) Info() *schema.ToolInfo {
	return &schema.ToolInfo{Name: t.name, Desc: "A tool for tests.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{"key": {Type: schema.String}})}
}

func (t testTool) Run(ctx context.Context, _ *tools.Env, args string) (string, error) {
	return t.run(ctx, args)
}

func init() {
	register := func(name string, run func(ctx context.Context, args string) (string, error)) {
		tools.Register(name, func(tools.Config) (tools.Tool, error) { return testTool{name, run}, nil })
	}
	register("test_wait", func(ctx context.Context, args string) (string, error) {
		key := argKey(args)
		select {
		case <-gate(key):
			return "done " + key, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	register("test_fail", func(context.Context, string) (string, error) {
		return "", errors.New("the backend said no")
	})
	register("test_panic", func(context.Context, string) (string, error) { panic("boom") })
	register("test_hang", func(ctx context.Context, args string) (string, error) {
		if key := argKey(args); key != "{}" && key != "" {
			openGate(key + "-started")
		}
		<-ctx.Done()
		return "", ctx.Err()
	})
}

// agentChain builds the agent mode with agent_loop settings laid over its
// defaults.
func agentChain(t *testing.T, settings map[string]any) *pipeline.EventManager {
	t.Helper()
	return pipelinetest.Chain(t, "agent", []any{map[string]any{"agent_loop": settings}}, sections(nil))
}

// placed summarises the non-delta events as type@turn.tab (stage events
// left out), to assert order and placement at once.
func placed(res *pipelinetest.Result) []string {
	var out []string
	for _, ev := range res.Events {
		if ev.Type == eventbus.TypeStage || ev.Type == eventbus.TypeThinkingDelta ||
			ev.Type == eventbus.TypeAnswerDelta || ev.Type == eventbus.TypeToolCallDelta {
			continue
		}
		s := string(ev.Type)
		if p := ev.Placement; p != nil {
			s += fmt.Sprintf("@%d.%d", p.Turn, p.Tab)
		}
		out = append(out, s)
	}
	return out
}

func toolResults(res *pipelinetest.Result) []eventbus.ToolResult {
	var out []eventbus.ToolResult
	for _, ev := range res.Events {
		if r, ok := ev.Payload.(eventbus.ToolResult); ok {
			out = append(out, r)
		}
	}
	return out
}

// A tool call, its result, then the answer: events in order, each placed
// in its cycle, and the second call sees the call and its result.
func TestAgentLoopRunsAToolThenAnswers(t *testing.T) {
	t.Parallel()
	model := pipelinetest.NewModel(
		pipelinetest.Script{Chunks: slices.Concat(
			pipelinetest.Reasoning("I should search.", 2),
			pipelinetest.ToolCall(0, "call_a", "knowledge_search", `{"query":"resume a stream"}`, 3),
			[]pipelinetest.Chunk{{FinishReason: "tool_calls"}})},
		pipelinetest.Script{Chunks: pipelinetest.Answer("Reconnect with Last-Event-ID [1].", 3)},
	)
	kb := &fakeKnowledge{docs: sampleDocs}
	res := pipelinetest.Run(t.Context(), agentChain(t, nil), pipelinetest.Request{Query: "How do I resume?", Models: model, Knowledge: kb})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	want := []string{
		"model_call.started@1.0", "thinking.start@1.0", "thinking.end@1.0",
		"tool_call.start@1.1", "tool_call.end@1.1", "model_call.finished@1.0",
		"references@1.1", "tool_result@1.1",
		"model_call.started@2.0", "answer.start@2.0", "answer.end@2.0", "model_call.finished@2.0",
		"usage",
	}
	if got := placed(res); !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	if res.Answer() != "Reconnect with Last-Event-ID [1]." {
		t.Fatalf("answer = %q", res.Answer())
	}
	refs, _ := res.References()
	if len(refs) == 0 || refs[0].Index != 1 || refs[0].DocumentID != "resume" {
		t.Fatalf("references = %+v", refs)
	}
	if q := kb.queries(); !slices.Equal(q, []string{"resume a stream"}) {
		t.Fatalf("searched %v", q)
	}
	results := toolResults(res)
	if len(results) != 1 || results[0].ToolCallID != "call_a" || results[0].Status != eventbus.ToolCompleted ||
		!strings.Contains(results[0].Output, "[1] Resuming a stream") {
		t.Fatalf("tool results = %+v", results)
	}

	calls := model.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d model calls", len(calls))
	}
	msgs := calls[1].Messages
	asst, tool, reminder := msgs[len(msgs)-3], msgs[len(msgs)-2], msgs[len(msgs)-1]
	if reminder.Role != schema.User || !strings.HasPrefix(reminder.Content, "Reminder: answer the question") {
		t.Fatalf("the prompt after a tool ran ends with %+v, want the reminder", reminder)
	}
	if asst.Role != schema.Assistant || len(asst.ToolCalls) != 1 || asst.ToolCalls[0].ID != "call_a" ||
		asst.ToolCalls[0].Function.Arguments != `{"query":"resume a stream"}` {
		t.Fatalf("assistant message sent back = %+v", asst)
	}
	if tool.Role != schema.Tool || tool.ToolCallID != "call_a" || tool.Content != results[0].Output {
		t.Fatalf("tool message sent back = %+v", tool)
	}
	if s, ok := res.Stage("generate"); !ok || s.Detail != "2 model calls, 1 tool call" {
		t.Fatalf("stage = %+v", s)
	}
}

// Parallel calls run at once; results stream as they complete but go back
// to the model in call order; every call has exactly one result.
func TestAgentLoopParallelToolsStreamInCompletionOrderAndReturnInCallOrder(t *testing.T) {
	t.Parallel()
	slow, fast := uniqueKey("slow"), uniqueKey("fast")
	model := pipelinetest.NewModel(
		pipelinetest.Script{Chunks: slices.Concat(
			pipelinetest.ToolCall(0, "call_slow", "test_wait", `{"key":"`+slow+`"}`, 2),
			pipelinetest.ToolCall(1, "call_fast", "test_wait", `{"key":"`+fast+`"}`, 2),
			pipelinetest.ToolCall(2, "call_bad", "no_such_tool", `{}`, 1))},
		pipelinetest.Script{Chunks: pipelinetest.Answer("Both done.", 2)},
	)
	openGate(fast)
	res := pipelinetest.Run(t.Context(), agentChain(t, map[string]any{"tools": []any{"test_wait"}}),
		pipelinetest.Request{Query: "Q", Models: model, Setup: func(cm *pipeline.ChatManage) {
			inner := cm.Emitter
			cm.Emitter = eventbus.EmitterFunc(func(ev eventbus.Event) {
				inner.Emit(ev)
				if r, ok := ev.Payload.(eventbus.ToolResult); ok && r.ToolCallID == "call_fast" {
					openGate(slow) // the slow call finishes only after the fast one's result
				}
			})
		}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	var order []string
	for _, r := range toolResults(res) {
		order = append(order, r.ToolCallID+":"+r.Status)
	}
	if want := []string{"call_bad:failed", "call_fast:completed", "call_slow:completed"}; !slices.Equal(order, want) {
		t.Fatalf("tool_result order %v, want %v", order, want)
	}
	tabs := map[string]int{}
	for _, ev := range res.Events {
		if r, ok := ev.Payload.(eventbus.ToolResult); ok {
			tabs[r.ToolCallID] = ev.Placement.Tab
		}
	}
	if tabs["call_slow"] != 1 || tabs["call_fast"] != 2 || tabs["call_bad"] != 3 {
		t.Fatalf("tabs = %v", tabs)
	}
	msgs := model.Calls()[1].Messages
	var sentBack []string
	for _, m := range msgs {
		if m.Role == schema.Tool {
			sentBack = append(sentBack, m.ToolCallID+"="+m.Content)
		}
	}
	want := []string{"call_slow=done " + slow, "call_fast=done " + fast,
		`call_bad=Error: there is no tool named "no_such_tool" (tools: test_wait)`}
	if !slices.Equal(sentBack, want) {
		t.Fatalf("results sent back\n got %v\nwant %v", sentBack, want)
	}
}

// A failing, panicking or timed-out tool gives a failed result the model
// reads, and the loop goes on.
func TestAgentLoopToolFailuresAreResultsTheModelSees(t *testing.T) {
	t.Parallel()
	model := pipelinetest.NewModel(
		pipelinetest.Script{Chunks: slices.Concat(
			pipelinetest.ToolCall(0, "c_fail", "test_fail", `{}`, 1),
			pipelinetest.ToolCall(1, "c_panic", "test_panic", `{}`, 1),
			pipelinetest.ToolCall(2, "c_hang", "test_hang", `{}`, 1),
			pipelinetest.ToolCall(3, "c_json", "test_fail", `{"key":`, 1))},
		pipelinetest.Script{Chunks: pipelinetest.Answer("Nothing worked.", 1)},
	)
	chain := agentChain(t, map[string]any{"tools": []any{"test_fail", "test_panic",
		map[string]any{"test_hang": map[string]any{"timeout": "50ms"}}}})
	res := pipelinetest.Run(t.Context(), chain, pipelinetest.Request{Query: "Q", Models: model})
	if res.Err != nil || res.Answer() != "Nothing worked." {
		t.Fatalf("err %v answer %q", res.Err, res.Answer())
	}
	got := map[string]string{}
	for _, r := range toolResults(res) {
		if r.Status != eventbus.ToolFailed {
			t.Fatalf("result %+v not failed", r)
		}
		got[r.ToolCallID] = r.Output
	}
	want := map[string]string{
		"c_fail":  "the backend said no",
		"c_panic": "the tool test_panic failed unexpectedly",
		"c_hang":  "the tool test_hang did not finish within 50ms",
		"c_json":  "the arguments are not valid JSON; call the tool again with a JSON object",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("results\n got %v\nwant %v", got, want)
	}
	for _, m := range model.Calls()[1].Messages {
		if m.Role == schema.Tool && !strings.HasPrefix(m.Content, "Error: ") {
			t.Fatalf("failure sent back as %q", m.Content)
		}
	}
}

// toolNamesOf lists the tools a recorded provider request offered.
func toolNamesOf(body map[string]any) []string {
	list, _ := body["tools"].([]any)
	var out []string
	for _, t := range list {
		fn := t.(map[string]any)["function"].(map[string]any)
		out = append(out, fn["name"].(string))
	}
	return out
}

// force_tool requires its tool on the first call only; the last call
// (max_cycles) is offered no tools at all and answers.
func TestAgentLoopForcesTheFirstToolAndOffersNoneOnTheLastCycle(t *testing.T) {
	t.Parallel()
	srv := providertest.New(t)
	srv.Enqueue(
		providertest.Script{Chunks: providertest.ToolCall(0, "call_1", "knowledge_search", `{"query":"plugins"}`, 2)},
		providertest.Script{Chunks: providertest.ToolCall(0, "call_2", "fetch_document", `{"document_id":"plugin"}`, 2)},
		providertest.Script{Chunks: providertest.Answer("Write one file [1].", 2)},
	)
	kb := &docKB{fakeKnowledge{docs: sampleDocs}}
	chain := agentChain(t, map[string]any{"max_cycles": 3, "force_tool": "knowledge_search"})
	res := pipelinetest.Run(t.Context(), chain, pipelinetest.Request{Query: "How do I write a plugin?",
		Models: pipelinetest.Models{"default": pipelinetest.OpenAI(t, srv.BaseURL())}, Knowledge: kb})
	if res.Err != nil || res.Answer() != "Write one file [1]." {
		t.Fatalf("err %v answer %q", res.Err, res.Answer())
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	first := reqs[0].Body
	if names := toolNamesOf(first); !slices.Equal(names, []string{"knowledge_search"}) {
		t.Fatalf("first call offered %v", names)
	}
	if choice, _ := first["tool_choice"].(map[string]any); choice == nil ||
		choice["function"].(map[string]any)["name"] != "knowledge_search" {
		t.Fatalf("first tool_choice = %v", first["tool_choice"])
	}
	if names := toolNamesOf(reqs[1].Body); !slices.Equal(names, []string{"knowledge_search", "fetch_document"}) ||
		reqs[1].Body["tool_choice"] != "auto" {
		t.Fatalf("second call offered %v, tool_choice %v", names, reqs[1].Body["tool_choice"])
	}
	if _, ok := reqs[2].Body["tools"]; ok {
		t.Fatalf("the last call was offered tools: %s", reqs[2].Raw)
	}
	if _, ok := reqs[2].Body["tool_choice"]; ok {
		t.Fatalf("the last call has a tool_choice: %s", reqs[2].Raw)
	}
	results := toolResults(res)
	if len(results) != 2 || !strings.HasPrefix(results[1].Output, "Document plugin: Writing a plugin") {
		t.Fatalf("tool results = %+v", results)
	}
	// The last request carries both calls and both results, in order.
	msgs := reqs[2].Body["messages"].([]any)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if want := "system user assistant tool assistant tool user"; strings.Join(roles, " ") != want { // the reminder last
		t.Fatalf("roles %v, want %s", roles, want)
	}
}

// A model that still calls a tool on the last cycle (offered none) gets
// "not run" results; without text it fails with no_answer.
func TestAgentLoopCycleLimitEndsAToolHungryModel(t *testing.T) {
	t.Parallel()
	call := func(id string) pipelinetest.Script {
		return pipelinetest.Script{Chunks: pipelinetest.ToolCall(0, id, "test_fail", `{}`, 1)}
	}
	model := pipelinetest.NewModel(call("c1"), call("c2"))
	res := pipelinetest.Run(t.Context(), agentChain(t, map[string]any{"max_cycles": 2, "tools": []any{"test_fail"}}),
		pipelinetest.Request{Query: "Q", Models: model})
	if res.Err == nil || res.Err.Code != "no_answer" {
		t.Fatalf("err = %v", res.Err)
	}
	results := toolResults(res)
	if len(results) != 2 || results[1].ToolCallID != "c2" || results[1].Output != "Not run: the cycle limit was reached." {
		t.Fatalf("results = %+v", results)
	}
}

// A tool call written as JSON text is run as a tool call, and its text is
// never shown; an answer that only starts like one is released.
func TestAgentLoopRunsAToolCallWrittenAsText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		call       bool
	}{
		{"bare object", `{"name": "test_wait", "arguments": {"key": "text-1"}}`, true},
		{"fenced", "```json\n{\"name\":\"test_wait\",\"parameters\":{\"key\":\"text-1\"}}\n```", true},
		{"hermes tags", "<tool_call>\n{\"name\": \"test_wait\", \"arguments\": \"{\\\"key\\\":\\\"text-1\\\"}\"}\n</tool_call>", true},
		{"not a tool", `{"answer": 42} is the JSON you asked for.`, false},
		{"prose", "Plain answer.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			openGate("text-1")
			model := pipelinetest.NewModel(
				pipelinetest.Script{Chunks: pipelinetest.Answer(tc.text, 5)},
				pipelinetest.Script{Chunks: pipelinetest.Answer("Final.", 1)},
			)
			res := pipelinetest.Run(t.Context(), agentChain(t, map[string]any{"tools": []any{"test_wait"}}),
				pipelinetest.Request{Query: "Q", Models: model})
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if !tc.call {
				if res.Answer() != tc.text || len(model.Calls()) != 1 {
					t.Fatalf("answer %q after %d calls", res.Answer(), len(model.Calls()))
				}
				return
			}
			want := []string{"model_call.started@1.0", "tool_call.start@1.1", "tool_call.end@1.1", "model_call.finished@1.0",
				"tool_result@1.1", "model_call.started@2.0", "answer.start@2.0", "answer.end@2.0", "model_call.finished@2.0", "usage"}
			if got := placed(res); !slices.Equal(got, want) {
				t.Fatalf("events\n got %v\nwant %v", got, want)
			}
			if r := toolResults(res); len(r) != 1 || r[0].Output != "done text-1" || r[0].ToolCallID != "call_1_text_1" {
				t.Fatalf("results = %+v", r)
			}
			if res.Answer() != "Final." {
				t.Fatalf("answer = %q", res.Answer())
			}
		})
	}
}

// Each search's passages join the references after the earlier ones; a
// passage found again keeps its number. Text of successive cycles is
// separated in the saved answer.
func TestKnowledgeSearchNumbersReferencesAcrossCalls(t *testing.T) {
	t.Parallel()
	model := pipelinetest.NewModel(
		pipelinetest.Script{Chunks: slices.Concat(pipelinetest.Content("Searching.", 1),
			pipelinetest.ToolCall(0, "s1", "knowledge_search", `{"query":"resume stream Last-Event-ID"}`, 1))},
		pipelinetest.Script{Chunks: pipelinetest.ToolCall(0, "s2", "knowledge_search", `{"query":"plugin register resume"}`, 1)},
		pipelinetest.Script{Chunks: pipelinetest.Answer("See [1] and [3]; not [9].", 2)},
	)
	res := pipelinetest.Run(t.Context(), agentChain(t, nil),
		pipelinetest.Request{Query: "Q", Models: model, Knowledge: &fakeKnowledge{docs: sampleDocs}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	var lists [][]string
	for _, ev := range res.Events {
		if r, ok := ev.Payload.(eventbus.References); ok {
			var ids []string
			for _, item := range r.Items {
				ids = append(ids, fmt.Sprintf("%d:%s", item.Index, item.ChunkID))
			}
			lists = append(lists, ids)
		}
	}
	if len(lists) != 2 || len(lists[1]) <= len(lists[0]) || !slices.Equal(lists[1][:len(lists[0])], lists[0]) {
		t.Fatalf("references events = %v", lists)
	}
	second := toolResults(res)[1].Output
	if !strings.Contains(second, "[1] Resuming a stream") {
		t.Fatalf("a passage found again lost its number:\n%s", second)
	}
	if res.Answer() != "Searching.\n\nSee [1] and [3]; not ." {
		t.Fatalf("answer = %q (the citation filter drops [9])", res.Answer())
	}
}

// fetch_document reads the request's tenant's documents only.
func TestFetchDocumentIsTenantScoped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ tenant, want string }{
		{"default", "Document resume: Resuming a stream"},
		{"acme", `there is no document with id "resume"`},
	} {
		model := pipelinetest.NewModel(
			pipelinetest.Script{Chunks: pipelinetest.ToolCall(0, "f1", "fetch_document", `{"document_id":"resume"}`, 1)},
			pipelinetest.Script{Chunks: pipelinetest.Answer("Done.", 1)},
		)
		res := pipelinetest.Run(t.Context(), agentChain(t, nil), pipelinetest.Request{TenantID: tc.tenant, Query: "Q",
			Models: model, Knowledge: &docKB{fakeKnowledge{docs: sampleDocs}}})
		if r := toolResults(res); res.Err != nil || len(r) != 1 || !strings.HasPrefix(r[0].Output, tc.want) {
			t.Fatalf("tenant %s: err %v results %+v", tc.tenant, res.Err, r)
		}
	}
}

// approver answers approval requests as the test says.
type approver struct {
	mu       sync.Mutex
	decision string // "" = never answers
	open     []string
	closed   []string
}

func (a *approver) Open(id string) <-chan string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.open = append(a.open, id)
	ch := make(chan string, 1)
	if a.decision != "" {
		ch <- a.decision
	}
	return ch
}

func (a *approver) Close(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = append(a.closed, id)
}

// A tool marked require_approval asks first: allowed it runs, denied or
// unanswered the model reads a denial, and the decision is on the stream.
func TestAgentLoopAsksApprovalBeforeATool(t *testing.T) {
	t.Parallel()
	openGate("appr")
	for _, tc := range []struct {
		name     string
		approver *approver
		reason   string
		result   string
		status   string
	}{
		{"allow", &approver{decision: eventbus.DecisionAllow}, eventbus.DecidedByUser, "done appr", eventbus.ToolCompleted},
		{"deny", &approver{decision: eventbus.DecisionDeny}, eventbus.DecidedByUser, "denied by user", eventbus.ToolDenied},
		{"timeout", &approver{}, eventbus.DecidedByTimeout, "denied: no one approved the call in time", eventbus.ToolDenied},
		{"no approver", nil, eventbus.DecidedUnavailable, "denied: approvals cannot be asked for here", eventbus.ToolDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := pipelinetest.NewModel(
				pipelinetest.Script{Chunks: pipelinetest.ToolCall(0, "a1", "test_wait", `{"key":"appr"}`, 1)},
				pipelinetest.Script{Chunks: pipelinetest.Answer("Ok.", 1)},
			)
			chain := agentChain(t, map[string]any{"approval_timeout": "50ms",
				"tools": []any{map[string]any{"test_wait": map[string]any{"require_approval": true}}}})
			res := pipelinetest.Run(t.Context(), chain, pipelinetest.Request{Query: "Q", Models: model,
				Setup: func(cm *pipeline.ChatManage) {
					if tc.approver != nil {
						cm.Approvals = tc.approver
					}
				}})
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			// The call is complete before the model call ends, so it asks for
			// approval at once. The decision comes after the request and before
			// the result; whether before or after the model call's end depends
			// on how fast the approver answers (both are right).
			want := []string{"model_call.started@1.0", "tool_call.start@1.1", "tool_call.end@1.1", "tool_call.approval_request@1.1",
				"model_call.finished@1.0", "tool_result@1.1",
				"model_call.started@2.0", "answer.start@2.0", "answer.end@2.0", "model_call.finished@2.0", "usage"}
			got := placed(res)
			at := slices.Index(got, "tool_call.approval_decision@1.1")
			rest := slices.DeleteFunc(slices.Clone(got), func(e string) bool { return e == "tool_call.approval_decision@1.1" })
			if at < 0 || !slices.Equal(rest, want) ||
				at < slices.Index(got, "tool_call.approval_request@1.1") || at > slices.Index(got, "tool_result@1.1") {
				t.Fatalf("events\n got %v\nwant %v with tool_call.approval_decision@1.1 between the request and the result", got, want)
			}
			var decision eventbus.ToolApproval
			for _, ev := range res.Events {
				if ev.Type == eventbus.TypeToolCallApprovalDecision {
					decision = ev.Payload.(eventbus.ToolApproval)
				}
			}
			if decision.Reason != tc.reason || decision.ToolCallID != "a1" {
				t.Fatalf("decision = %+v", decision)
			}
			if r := toolResults(res); len(r) != 1 || r[0].Output != tc.result || r[0].Status != tc.status {
				t.Fatalf("results = %+v", r)
			}
			if tc.approver != nil && (!slices.Equal(tc.approver.open, []string{"a1"}) || !slices.Equal(tc.approver.closed, []string{"a1"})) {
				t.Fatalf("approvals opened %v closed %v", tc.approver.open, tc.approver.closed)
			}
		})
	}
}

// Stopping while a tool runs ends the call with a result and the loop
// with a cancellation; no further model call is made.
func TestAgentLoopStopDuringAToolEndsTheCallAndTheLoop(t *testing.T) {
	t.Parallel()
	key := uniqueKey("stop")
	model := pipelinetest.NewModel(
		pipelinetest.Script{Chunks: pipelinetest.ToolCall(0, "h1", "test_hang", `{"key":"`+key+`"}`, 1)},
	)
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	go func() {
		<-gate(key + "-started") // the tool is running
		cancel(errors.New("stop"))
	}()
	res := pipelinetest.Run(ctx, agentChain(t, map[string]any{"tools": []any{"test_hang"}}),
		pipelinetest.Request{Query: "Q", Models: model})
	if res.Status() != eventbus.StatusStopped {
		t.Fatalf("status %s err %v", res.Status(), res.Err)
	}
	if r := toolResults(res); len(r) != 1 || r[0].Output != "the call was stopped" || r[0].Status != eventbus.ToolFailed {
		t.Fatalf("results = %+v", r)
	}
	if n := len(model.Calls()); n != 1 {
		t.Fatalf("%d model calls after a stop", n)
	}
}

// Configuration mistakes name the key.
func TestAgentLoopConfigErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		settings map[string]any
		want     string
	}{
		{map[string]any{"tools": []any{"nope"}}, `plugins.agent_loop.tools[0] (nope): unknown tool "nope"`},
		{map[string]any{"force_tool": "test_fail", "tools": []any{"test_wait"}}, `force_tool: "test_fail" is not among the tools offered (test_wait)`},
		{map[string]any{"force_tool": "test_wait", "max_cycles": 1, "tools": []any{"test_wait"}}, "needs max_cycles of at least 2"},
		{map[string]any{"tools": []any{map[string]any{"knowledge_search": map[string]any{"chain": []any{"search", "chat_completion_stream"}}}}},
			"plugin chat_completion_stream answers"},
		{map[string]any{"tools": []any{map[string]any{"test_wait": map[string]any{"timeout": "0s"}}}}, "timeout: must be positive"},
		{map[string]any{"tools": []any{map[string]any{"fetch_document": map[string]any{"max_char": 10}}}}, "max_char"},
		{map[string]any{"tools": []any{"test_wait", "test_wait"}}, "tool listed twice"},
	} {
		_, err := pipelinetest.BuildChain("agent", []any{"agent_loop"}, sections(map[string]map[string]any{"agent_loop": tc.settings}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("settings %v: error %v, want it to contain %q", tc.settings, err, tc.want)
		}
	}
}

// docKB is fakeKnowledge that also reads whole documents (the sample
// chunks of a document joined), all of the default tenant.
type docKB struct{ fakeKnowledge }

func (k *docKB) ReadDocument(_ context.Context, tenantID, id string) (retrieval.Document, error) {
	var doc retrieval.Document
	for _, d := range k.docs {
		if d.DocumentID == id && (tenantID == "" || tenantID == "default") {
			doc.ID, doc.Title = id, d.Title
			doc.Content += d.Content + "\n"
		}
	}
	if doc.ID == "" {
		return doc, fmt.Errorf("document %s: %w", id, retrieval.ErrDocumentNotFound)
	}
	return doc, nil
}
