package pipelinetest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/cloudwego/eino/schema"
	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
	_ "github.com/chatpipe/chatpipe/plugins" // chat_completion_stream
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func chatChain(t *testing.T) *pipeline.EventManager {
	return pipelinetest.Chain(t, "chat", []any{"chat_completion_stream"},
		map[string]map[string]any{"chat_completion_stream": {"think_tags": false}})
}

// Content, reasoning, tool-call deltas and usage each become their events.
func TestScriptedModelStreamsEveryKindOfDelta(t *testing.T) {
	t.Parallel()
	chunks := slices.Concat(
		pipelinetest.Reasoning("Think first.", 2),
		pipelinetest.Content("The answer.", 3),
		pipelinetest.ToolCall(0, "call_1", "search", `{"q":"x"}`, 2),
		[]pipelinetest.Chunk{{FinishReason: "tool_calls", Usage: &schema.TokenUsage{PromptTokens: 7, CompletionTokens: 5}}},
	)
	model := pipelinetest.NewModel(pipelinetest.Script{Chunks: chunks})
	res := pipelinetest.Run(t.Context(), chatChain(t), pipelinetest.Request{Query: "Q?", Models: model})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.Thinking() != "Think first." || res.Answer() != "The answer." {
		t.Fatalf("thinking %q answer %q", res.Thinking(), res.Answer())
	}
	if res.Count(eventbus.TypeToolCallStart) != 1 || res.Count(eventbus.TypeToolCallDelta) != 2 || res.Count(eventbus.TypeToolCallEnd) != 1 {
		t.Fatalf("tool call events: %v", res.Types())
	}
	var usage eventbus.Usage
	for _, ev := range res.Events {
		if u, ok := ev.Payload.(eventbus.Usage); ok {
			usage = u
		}
	}
	if usage.PromptTokens != 7 || usage.CompletionTokens != 5 {
		t.Fatalf("usage = %+v", usage)
	}
	calls := model.Calls()
	if len(calls) != 1 || !calls[0].Stream || calls[0].Messages[len(calls[0].Messages)-1].Content != "Q?" {
		t.Fatalf("calls = %+v", calls)
	}
	for i, ev := range res.Events {
		if ev.Seq != int64(i+1) || ev.StreamID != res.State.MessageID {
			t.Fatalf("event %d: seq %d stream %q", i, ev.Seq, ev.StreamID)
		}
	}
}

// A stream that fails after N chunks keeps those N and ends the chain
// with a provider error.
func TestScriptedModelFailsAfterNChunks(t *testing.T) {
	t.Parallel()
	model := pipelinetest.NewModel(pipelinetest.Script{
		Chunks: pipelinetest.Deltas("one ", "two "),
		Err:    pipelinetest.ErrScripted,
	})
	res := pipelinetest.Run(t.Context(), chatChain(t), pipelinetest.Request{Query: "Q?", Models: model})
	if res.Err == nil || !errors.Is(res.Err, pipelinetest.ErrScripted) || res.Status() != eventbus.StatusFailed {
		t.Fatalf("Err = %v, status %s", res.Err, res.Status())
	}
	if res.Answer() != "one two " {
		t.Fatalf("partial answer %q", res.Answer())
	}

	model = pipelinetest.NewModel(pipelinetest.Script{StreamErr: pipelinetest.ErrScripted})
	res = pipelinetest.Run(t.Context(), chatChain(t), pipelinetest.Request{Query: "Q?", Models: model})
	if res.Err == nil || res.Count(eventbus.TypeAnswerDelta) != 0 {
		t.Fatalf("a call failing before its first chunk: Err %v, events %v", res.Err, res.Types())
	}
}

// Cancelling the request while the model holds ends the stream at once,
// as stopping a generation does, with what was streamed kept.
func TestScriptedModelHonoursCancellation(t *testing.T) {
	t.Parallel()
	gate := pipelinetest.NewGate()
	defer gate.Release()
	model := pipelinetest.NewModel(pipelinetest.Script{
		Chunks: pipelinetest.Deltas("kept ", "never"), Hold: gate, HoldAfter: 1,
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *pipelinetest.Result)
	go func() { done <- pipelinetest.Run(ctx, chatChain(t), pipelinetest.Request{Query: "Q?", Models: model}) }()
	<-gate.Reached()
	cancel()
	res := <-done
	if res.Status() != eventbus.StatusStopped || res.Answer() != "kept " {
		t.Fatalf("status %s answer %q err %v", res.Status(), res.Answer(), res.Err)
	}
	if res.Index(eventbus.TypeAnswerEnd) < 0 {
		t.Fatalf("the answer block was left open: %v", res.Types())
	}
}

// A reader closed early leaves nothing running (goleak checks), and the
// model's pauses end with the context.
func TestScriptedStreamClosedEarlyOrCancelledLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	model := pipelinetest.NewModel(pipelinetest.Script{Chunks: pipelinetest.Deltas("a", "b", "c"), Delay: time.Hour})
	sr, err := model.Stream(t.Context(), []*schema.Message{schema.UserMessage("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := sr.Recv(); err != nil || msg.Content != "a" {
		t.Fatalf("first Recv = %v, %v", msg, err)
	}
	sr.Close()

	ctx, cancel := context.WithCancelCause(t.Context())
	model.Enqueue(pipelinetest.Script{Chunks: pipelinetest.Deltas("a", "b"), Delay: time.Hour})
	sr, err = model.Stream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	_, _ = sr.Recv()
	stop := errors.New("stopped")
	cancel(stop)
	if _, err := sr.Recv(); !errors.Is(err, stop) {
		t.Fatalf("Recv after cancel = %v, want the cause", err)
	}
}

// Generate joins the script; the queue runs out into the default script.
func TestScriptedModelGenerateAndDefault(t *testing.T) {
	t.Parallel()
	model := pipelinetest.NewModel(pipelinetest.Script{Chunks: pipelinetest.Deltas("a", "b")})
	msg, err := model.Generate(t.Context(), nil)
	if err != nil || msg.Content != "ab" {
		t.Fatalf("Generate = %v, %v", msg, err)
	}
	sr, err := model.Stream(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	var got string
	for {
		m, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got += m.Content
	}
	if got != "Hello from the scripted model." || len(model.Calls()) != 2 {
		t.Fatalf("default script streamed %q; calls %d", got, len(model.Calls()))
	}
	if err := model.WaitCalls(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
}

func TestSplitConcatenatesBack(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"", "a", "hello world", "断线以后怎样恢复流"} {
		for pieces := 0; pieces < 12; pieces++ {
			parts := pipelinetest.Split(text, pieces)
			joined := ""
			for _, p := range parts {
				if p == "" {
					t.Fatalf("Split(%q, %d) has an empty part", text, pieces)
				}
				joined += p
			}
			if joined != text {
				t.Fatalf("Split(%q, %d) = %q", text, pieces, parts)
			}
		}
	}
}

// Example shows the kit end to end: a chain, a scripted model, one run.
func Example() {
	model := pipelinetest.NewModel(pipelinetest.Script{Chunks: pipelinetest.Answer("Hello there.", 3)})
	chain, err := pipelinetest.BuildChain("chat", []any{"chat_completion_stream"}, nil)
	if err != nil {
		panic(err)
	}
	res := pipelinetest.Run(context.Background(), chain, pipelinetest.Request{Query: "Hi", Models: model})
	fmt.Println(res.Status(), res.Answer(), len(model.Calls()))
	// Output: completed Hello there. 1
}
