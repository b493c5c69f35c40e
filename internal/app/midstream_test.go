package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/tools"
)

// e2e_stream is e2e_wait that also streams its output: "started <key>"
// as soon as it runs, then "done <key>" once the test opens its gate.
type e2eStream struct{ e2eWait }

func (e2eStream) Info() *schema.ToolInfo {
	info := e2eWait{}.Info()
	info.Name = "e2e_stream"
	return info
}

func (e2eStream) Run(ctx context.Context, env *tools.Env, args string) (string, error) {
	var a struct{ Key string }
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return "", err
	}
	env.Output("started " + a.Key + "\n")
	out, err := e2eWait{}.Run(ctx, env, args)
	return "started " + a.Key + "\n" + out, err
}

func init() {
	tools.Register("e2e_stream", func(tools.Config) (tools.Tool, error) { return e2eStream{}, nil })
}

// waitGate waits for a gate of the e2e tools, failing the test after a while.
func waitGate(t *testing.T, key string) {
	t.Helper()
	select {
	case <-e2eGate(key):
	case <-time.After(20 * time.Second):
		t.Fatalf("gate %s never opened", key)
	}
}

// The model streams two complete tool calls, then keeps talking: both
// tools start (and stream output) while the provider still holds its
// stream open, the results stream in completion order, and the next
// model call reads them in call order.
func TestAgentStartsAToolWhileTheModelStillStreams(t *testing.T) {
	h := newHarness(t, agentMode(map[string]any{"tools": []any{"e2e_stream"}}))
	slow, fast := e2eKey("slow"), e2eKey("fast")
	gate := providertest.NewGate()
	defer gate.Release()
	chunks := append(providertest.ToolCall(0, "call_slow", "e2e_stream", `{"key":"`+slow+`"}`, 3),
		providertest.ToolCall(1, "call_fast", "e2e_stream", `{"key":"`+fast+`"}`, 3)...)
	held := len(chunks) + 1 // both calls and the first words of the text after them
	chunks = append(chunks, providertest.Content("Let me check both of these.", 3)...)
	chunks = append(chunks, providertest.Chunk{FinishReason: "tool_calls"})
	h.provider.Enqueue(
		providertest.Script{Chunks: chunks, Hold: gate, HoldAfter: held},
		providertest.Script{Chunks: providertest.Answer("Both finished.", 2)},
	)
	openE2EGate(fast)
	s := h.ask(h.createSession(), "Run both.")
	if err := gate.WaitReached(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	// The provider is still held mid-stream: the tools must start anyway.
	waitGate(t, slow+"-started")
	waitGate(t, fast+"-started")
	select {
	case <-gate.Reached():
	default:
		t.Fatal("gate not reached")
	}
	early := s.until(func(e event) bool {
		o, ok := e.Payload.(eventbus.ToolOutput)
		return ok && o.ToolCallID == "call_fast"
	})
	if i := indexOf(early, eventbus.TypeModelCallFinished); i >= 0 {
		t.Fatalf("the model call ended before the tool's output: %v", summary(early, false))
	}
	gate.Release()
	// The slow tool ends only after the model call has: the fast one's
	// result then streams first, whatever the machine's speed.
	mid := s.until(isType(eventbus.TypeModelCallFinished))
	openE2EGate(slow)
	evs := append(append(early, mid...), s.all()...)
	checkSeqs(t, evs, 1)

	firstEnd := indexOf(evs, eventbus.TypeModelCallFinished)
	var outputs []string
	for i, e := range evs {
		if o, ok := e.Payload.(eventbus.ToolOutput); ok {
			outputs = append(outputs, o.ToolCallID)
			if i > firstEnd || e.Placement == nil || e.Placement.Turn != 1 {
				t.Fatalf("tool output %d after the model call ended (%d) or misplaced: %v", i, firstEnd, summary(evs, false))
			}
		}
	}
	if len(outputs) != 2 {
		t.Fatalf("tool outputs streamed for %v, want both calls", outputs)
	}
	// Text the model wrote after the calls streamed after the tools started.
	lastText := slices.IndexFunc(evs, func(e event) bool {
		return e.Type == eventbus.TypeAnswerDelta && strings.Contains(e.Text, "these")
	})
	if lastText < 0 || lastText < indexOf(evs, eventbus.TypeToolCallOutputDelta) {
		t.Fatalf("the rest of the model's text came before the tools started: %v", summary(evs, true))
	}
	var order []string
	for _, r := range resultsOf(evs) {
		order = append(order, r.ToolCallID)
	}
	if want := []string{"call_fast", "call_slow"}; !slices.Equal(order, want) {
		t.Fatalf("results streamed %v, want completion order %v", order, want)
	}
	reqs := h.provider.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d provider requests", len(reqs))
	}
	want := []string{"call_slow=started " + slow + "\ndone " + slow, "call_fast=started " + fast + "\ndone " + fast}
	if got := toolMessages(reqs[1].Body); !slices.Equal(got, want) {
		t.Fatalf("results sent back %q, want call order %q", got, want)
	}
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("finished %+v", fin)
	}
}

// modelCalls lists the model_call events as started:N and
// finished:N:status:committed.
func modelCalls(evs []event) []string {
	var out []string
	for _, e := range evs {
		mc, ok := e.Payload.(eventbus.ModelCall)
		if !ok {
			continue
		}
		if e.Type == eventbus.TypeModelCallStarted {
			out = append(out, fmt.Sprintf("started:%d", mc.Attempt))
			continue
		}
		out = append(out, fmt.Sprintf("finished:%d:%s:%v", mc.Attempt, mc.Status, mc.Committed != nil && *mc.Committed))
	}
	return out
}

// committedText concatenates the answer deltas a reader keeps: those of
// committed model call attempts.
func committedText(evs []event) string {
	var b strings.Builder
	mark := 0
	for _, e := range evs {
		switch e.Type {
		case eventbus.TypeModelCallStarted:
			mark = b.Len()
		case eventbus.TypeModelCallFinished:
			if mc := e.Payload.(eventbus.ModelCall); mc.Committed != nil && !*mc.Committed {
				s := b.String()[:mark]
				b.Reset()
				b.WriteString(s)
			}
		case eventbus.TypeAnswerDelta:
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

func streamRetry(attempts int) func(*config.Config) {
	return func(c *config.Config) {
		m := c.Models["default"]
		m.StreamRetry.Attempts = attempts
		c.Models["default"] = m
	}
}

// The provider drops the connection after a few chunks: the attempt is
// finished uncommitted and a second attempt, told that the first was cut
// off, completes. The saved answer, the non-streaming API and a resumed
// reader hold only the second attempt's text; with retry off the answer
// fails as before.
func TestMidStreamRetryWithdrawsTheBrokenAttempt(t *testing.T) {
	broken := providertest.Script{Chunks: append(providertest.ReasoningContent("Hmm.", 1),
		providertest.Content("The first try breaks o", 3)...), Drop: true}
	second := providertest.Script{Chunks: append(providertest.ReasoningContent("Again.", 1),
		providertest.Answer("The second try completes.", 3)...),
		Usage: &providertest.Usage{PromptTokens: 30, CompletionTokens: 7}}

	t.Run("retried", func(t *testing.T) {
		h := newHarness(t, streamRetry(2))
		h.provider.Enqueue(broken, second)
		session := h.createSession()
		s := h.ask(session, "Tell me.")
		evs := s.all()
		checkSeqs(t, evs, 1)
		checkBlocks(t, evs)
		if got, want := modelCalls(evs), []string{"started:1", "finished:1:failed:false", "started:2", "finished:2:completed:true"}; !slices.Equal(got, want) {
			t.Fatalf("model calls %v, want %v", got, want)
		}
		if got := text(evs, eventbus.TypeAnswerDelta); !strings.Contains(got, "The first try breaks o") {
			t.Fatalf("the stream should carry the broken attempt's text too (readers drop it): %q", got)
		}
		if got := committedText(evs); got != "The second try completes." {
			t.Fatalf("committed text %q", got)
		}
		if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
			t.Fatalf("finished %+v", fin)
		}
		if _, ok := firstError(evs); ok {
			t.Fatal("a retried call reported an error")
		}
		// The usage counts both attempts: the broken one was paid for too.
		for _, e := range evs {
			if u, ok := e.Payload.(eventbus.Usage); ok && (u.PromptTokens <= 30 || u.CompletionTokens <= 7 || !u.Estimated) {
				t.Fatalf("usage %+v, want the second attempt's plus an estimate of the first", u)
			}
		}
		h.waitDone(s.messageID())
		msg := h.message(session, s.messageID())
		if msg.Status != "completed" || msg.Content != "The second try completes." || msg.Thinking != "Again." {
			t.Fatalf("saved %+v", msg)
		}
		reqs := h.provider.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d provider requests", len(reqs))
		}
		msgs := reqs[1].Body["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)
		if c, _ := last["content"].(string); !strings.HasPrefix(c, "Tell me.") || !strings.Contains(c, "cut off") {
			t.Fatalf("the second attempt's last message %q carries no note that the first was cut off", c)
		}
		// A reader resuming from the start replays every event exactly.
		replay := h.open("GET", "/api/v1/streams/"+s.messageID()+"?after=0", "").all()
		if !slices.Equal(summary(replay, true), summary(evs, true)) || committedText(replay) != "The second try completes." {
			t.Fatalf("replay differs:\n got %v\nwant %v", summary(replay, true), summary(evs, true))
		}
		// Resuming after the broken attempt's first deltas still ends with
		// the withdrawal, so the reader can drop them.
		cut := evs[indexOf(evs, eventbus.TypeAnswerDelta)].Seq
		rest := h.open("GET", "/api/v1/streams/"+s.messageID()+"?after="+itoa(cut), "").all()
		if got := modelCalls(rest); !slices.Equal(got, []string{"finished:1:failed:false", "started:2", "finished:2:completed:true"}) {
			t.Fatalf("resumed model calls %v", got)
		}
	})

	t.Run("not streamed", func(t *testing.T) {
		h := newHarness(t, streamRetry(2))
		h.provider.Enqueue(broken, second)
		var msg struct {
			Status, Content, Thinking string
		}
		if code := h.call("POST", "/api/v1/sessions/"+h.createSession()+"/messages", `{"content":"Tell me.","stream":false}`, &msg); code != 200 {
			t.Fatalf("status %d", code)
		}
		if msg.Status != "completed" || msg.Content != "The second try completes." || msg.Thinking != "Again." {
			t.Fatalf("gathered %+v", msg)
		}
	})

	t.Run("off", func(t *testing.T) {
		h := newHarness(t, streamRetry(1))
		h.provider.Enqueue(broken, second)
		session := h.createSession()
		s := h.ask(session, "Tell me.")
		evs := s.all()
		if got, want := modelCalls(evs), []string{"started:1", "finished:1:failed:true"}; !slices.Equal(got, want) {
			t.Fatalf("model calls %v, want %v", got, want)
		}
		if e, ok := firstError(evs); !ok || e.Code != "stream_truncated" || finished(t, evs).Status != eventbus.StatusFailed {
			t.Fatalf("error %+v, events %v", e, types(evs))
		}
		h.waitDone(s.messageID())
		if msg := h.message(session, s.messageID()); msg.Status != "failed" || msg.Content != "The first try breaks o" {
			t.Fatalf("saved %+v", msg)
		}
		if n := len(h.provider.Requests()); n != 1 {
			t.Fatalf("%d provider requests with retry off", n)
		}
	})
}

// A malformed chunk mid-stream is retried too, and reported as such.
func TestMidStreamRetryAfterAMalformedChunk(t *testing.T) {
	h := newHarness(t, streamRetry(2))
	h.provider.Enqueue(providertest.Script{Raw: []string{
		`data: {"choices":[{"index":0,"delta":{"content":"Half an ans"}}]}` + "\n\n",
		`data: {"choices":[{"index":0,"delta":{"content":` + "\n\n",
	}}, providertest.Script{Chunks: providertest.Answer("A whole answer.", 2)})
	evs := h.ask(h.createSession(), "q").all()
	if got, want := modelCalls(evs), []string{"started:1", "finished:1:malformed:false", "started:2", "finished:2:completed:true"}; !slices.Equal(got, want) {
		t.Fatalf("model calls %v, want %v", got, want)
	}
	if committedText(evs) != "A whole answer." || finished(t, evs).Status != eventbus.StatusCompleted {
		t.Fatalf("committed %q, events %v", committedText(evs), types(evs))
	}
}

// An agent cycle is retried like any model call; the cycle's answer
// separator and text-tool-call detection start afresh.
func TestMidStreamRetryInAnAgentCycle(t *testing.T) {
	h := newHarness(t, agentMode(map[string]any{"tools": []any{"e2e_wait"}}), streamRetry(2))
	key := e2eKey("agent")
	openE2EGate(key)
	h.provider.Enqueue(
		providertest.Script{Chunks: providertest.ToolCall(0, "call_1", "e2e_wait", `{"key":"`+key+`"}`, 2)},
		providertest.Script{Chunks: providertest.Content("Partial fin", 2), Drop: true},
		providertest.Script{Chunks: providertest.Answer("Final answer.", 2)},
	)
	session := h.createSession()
	s := h.ask(session, "Go.")
	evs := s.all()
	if got, want := modelCalls(evs), []string{"started:1", "finished:1:completed:true", "started:1", "finished:1:failed:false",
		"started:2", "finished:2:completed:true"}; !slices.Equal(got, want) {
		t.Fatalf("model calls %v, want %v", got, want)
	}
	if got := committedText(evs); got != "Final answer." {
		t.Fatalf("committed %q", got)
	}
	h.waitDone(s.messageID())
	if msg := h.message(session, s.messageID()); msg.Content != "Final answer." || msg.Status != "completed" {
		t.Fatalf("saved %+v", msg)
	}
}

// e2e_echo returns n copies of fill: tool output of a chosen size.
type e2eEcho struct{}

func (e2eEcho) Info() *schema.ToolInfo {
	return &schema.ToolInfo{Name: "e2e_echo", Desc: "Returns n copies of fill.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"n": {Type: schema.Integer, Required: true}, "fill": {Type: schema.String, Required: true}})}
}

func (e2eEcho) Run(_ context.Context, _ *tools.Env, args string) (string, error) {
	var a struct {
		N    int
		Fill string
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return "", err
	}
	return strings.Repeat(a.Fill, a.N), nil
}

func init() {
	tools.Register("e2e_echo", func(tools.Config) (tools.Tool, error) { return e2eEcho{}, nil })
}

// Each cycle's prompt keeps the tool output within max_tool_context,
// cutting the oldest first, and ends with the reminder once tools ran.
func TestAgentPromptCutsOldToolOutputAndEndsWithTheReminder(t *testing.T) {
	h := newHarness(t, agentMode(map[string]any{"tools": []any{"e2e_echo"},
		"max_tool_context": 5000, "reminder": "Remember: {question}"}))
	h.provider.Enqueue(
		providertest.Script{Chunks: providertest.ToolCall(0, "c1", "e2e_echo", `{"n":3000,"fill":"a"}`, 1)},
		providertest.Script{Chunks: providertest.ToolCall(0, "c2", "e2e_echo", `{"n":3000,"fill":"b"}`, 1)},
		providertest.Script{Chunks: providertest.Answer("Done.", 1)},
	)
	evs := h.ask(h.createSession(), "What repeats?").all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("finished %+v", fin)
	}
	reqs := h.provider.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d provider requests", len(reqs))
	}
	lastContent := func(body map[string]any) string {
		msgs := body["messages"].([]any)
		m := msgs[len(msgs)-1].(map[string]any)
		return fmt.Sprint(m["role"], ": ", m["content"])
	}
	if got := lastContent(reqs[0].Body); got != "user: What repeats?" {
		t.Fatalf("the first prompt ends with %q", got)
	}
	for _, r := range reqs[1:] {
		if got := lastContent(r.Body); got != "user: Remember: What repeats?" {
			t.Fatalf("a prompt after tools ends with %q, want the reminder", got)
		}
	}
	if got := toolMessages(reqs[1].Body); len(got) != 1 || got[0] != "c1="+strings.Repeat("a", 3000) {
		t.Fatalf("second prompt's tool output cut although it fits: %.60q", got)
	}
	got := toolMessages(reqs[2].Body)
	if len(got) != 2 || !strings.HasPrefix(got[0], "c1=[This earlier tool output was removed") ||
		got[1] != "c2="+strings.Repeat("b", 3000) {
		t.Fatalf("third prompt's tool output: %.80q", got)
	}
}
