package plugins_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
)

var followUp = []conversation.Message{
	{Role: "user", Content: "How do I run chatpipe?"},
	{Role: "assistant", Content: "Run go run . in the repository root [1]."},
}

func TestRewriteIsSkippedWithoutHistory(t *testing.T) {
	t.Parallel()
	provider := providertest.New(t)
	kb := &fakeKnowledge{hits: hitsOf("resume-0")}
	res := pipelinetest.Run(context.Background(), ragChain(t, nil), pipelinetest.Request{
		Query:     "How do I resume a stream?",
		Models:    pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())},
		Knowledge: kb,
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if st, _ := res.Stage("rewrite"); st.Status != eventbus.StageSkipped {
		t.Errorf("rewrite stage = %+v, want skipped", st)
	}
	if _, ok := res.Rewritten(); ok {
		t.Error("query.rewritten was sent without a rewrite")
	}
	if n := len(provider.Requests()); n != 1 {
		t.Errorf("provider got %d requests, want only the answer's", n)
	}
	if q := kb.queries(); len(q) != 1 || q[0] != "How do I resume a stream?" {
		t.Errorf("searched %q", q)
	}
}

func TestRewriteWithHistoryMakesTheQuestionStandalone(t *testing.T) {
	t.Parallel()
	provider := providertest.New(t)
	provider.Enqueue(providertest.Script{Chunks: providertest.Answer(
		"<think>They mean chatpipe's stream.</think>**Rewritten question:** \"How do I resume a chatpipe stream?\"\nDone.", 5)})
	kb := &fakeKnowledge{hits: hitsOf("resume-0")}
	res := pipelinetest.Run(context.Background(), ragChain(t, nil), pipelinetest.Request{
		Query:     "And how do I resume it?",
		History:   followUp,
		Models:    pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())},
		Knowledge: kb,
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	const want = "How do I resume a chatpipe stream?"
	rw, ok := res.Rewritten()
	if !ok || rw.Original != "And how do I resume it?" || rw.Rewritten != want {
		t.Fatalf("query.rewritten = %+v (sent: %v)", rw, ok)
	}
	if res.State.RewrittenQuery != want {
		t.Errorf("RewrittenQuery = %q", res.State.RewrittenQuery)
	}
	if q := kb.queries(); len(q) != 1 || q[0] != want {
		t.Errorf("searched %q, want the rewritten question", q)
	}
	if st, _ := res.Stage("rewrite"); st.Status != eventbus.StageFinished || !strings.Contains(st.Detail, "rewritten") {
		t.Errorf("rewrite stage = %+v", st)
	}
	reqs := provider.Requests()
	if len(reqs) != 2 {
		t.Fatalf("provider got %d requests, want rewrite + answer", len(reqs))
	}
	prompt := lastUserMessage(t, reqs[0].Body)
	for _, part := range []string{"User: How do I run chatpipe?", "Assistant: Run go run .", "Latest question: And how do I resume it?"} {
		if !strings.Contains(prompt, part) {
			t.Errorf("rewrite prompt lacks %q:\n%s", part, prompt)
		}
	}
	if answerPrompt := lastUserMessage(t, reqs[1].Body); !strings.Contains(answerPrompt, "Question: "+want) {
		t.Errorf("the answer prompt does not ask the rewritten question:\n%s", answerPrompt)
	}
}

func TestRewriteFailureSearchesTheQuestionAsAsked(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		script     providertest.Script
		settings   map[string]any
		wantDetail string
	}{
		{"model error", providertest.Script{Status: 500, Error: providertest.ErrorObject{Message: "boom"}}, nil,
			"the model call failed"},
		{"unusable reply", providertest.Script{Chunks: providertest.Answer("I'm sorry, I cannot help with that.", 2)}, nil,
			"answered instead of rewriting"},
		{"empty reply", providertest.Script{Chunks: providertest.Answer("<think>hmm</think>  \n", 2)}, nil,
			"no question"},
		{"timeout", providertest.Script{HoldHeaders: providertest.NewGate()}, map[string]any{"timeout": "50ms"},
			"did not answer within 50ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			provider := providertest.New(t)
			if g := tc.script.HoldHeaders; g != nil {
				t.Cleanup(g.Release)
				// Only the first request (the rewrite) is held: were the held
				// script queued, a rewrite that times out before its request
				// reaches the fake (a slow dial on a loaded machine) would
				// leave it to the answer, which would wait for the gate that
				// opens only after the test.
				var n atomic.Int32
				provider.SetResponder(func(providertest.Request) providertest.Script {
					if n.Add(1) == 1 {
						return tc.script
					}
					return providertest.DefaultScript()
				})
			} else {
				provider.Enqueue(tc.script)
			}
			kb := &fakeKnowledge{hits: hitsOf("resume-0")}
			res := pipelinetest.Run(context.Background(), ragChain(t, map[string]map[string]any{"rewrite": tc.settings}),
				pipelinetest.Request{
					Query:     "And how do I resume it?",
					History:   followUp,
					Models:    pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())},
					Knowledge: kb,
				})
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if _, ok := res.Rewritten(); ok {
				t.Error("query.rewritten sent for a failed rewrite")
			}
			if q := kb.queries(); len(q) != 1 || q[0] != "And how do I resume it?" {
				t.Errorf("searched %q, want the question as asked", q)
			}
			st, _ := res.Stage("rewrite")
			if st.Status != eventbus.StageFinished || !strings.Contains(st.Detail, tc.wantDetail) ||
				!strings.Contains(st.Detail, "as asked") {
				t.Errorf("rewrite stage = %+v, want a detail saying %q", st, tc.wantDetail)
			}
			if res.Answer() == "" {
				t.Error("no answer")
			}
		})
	}
}

func TestRewriteWithTheDemoModelIsLeftOut(t *testing.T) {
	t.Parallel()
	kb := &fakeKnowledge{docs: sampleDocs}
	res := pipelinetest.Run(context.Background(), ragChain(t, nil), pipelinetest.Request{
		Query:     "How do I resume a stream?",
		History:   followUp,
		Models:    pipelinetest.Models{"default": pipelinetest.Demo()},
		Knowledge: kb,
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if st, _ := res.Stage("rewrite"); !strings.Contains(st.Detail, "demo model does not rewrite") {
		t.Errorf("rewrite stage = %+v", st)
	}
}
