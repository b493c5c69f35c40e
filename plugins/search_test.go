package plugins_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/citation"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
)

func TestSearchErrorDegradesToNoPassagesAndTheFallback(t *testing.T) {
	t.Parallel()
	provider := providertest.New(t)
	res := pipelinetest.Run(context.Background(), ragChain(t, nil), pipelinetest.Request{
		Query:     "How do I resume a stream?",
		Models:    pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())},
		Knowledge: &fakeKnowledge{err: errors.New("database is locked")},
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	st, _ := res.Stage("search")
	if st.Status != eventbus.StageFinished || !strings.Contains(st.Detail, "search failed") ||
		strings.Contains(st.Detail, "database is locked") {
		t.Errorf("search stage = %+v, want a detail that says it failed (without internals)", st)
	}
	if st, _ := res.Stage("rerank"); st.Status != eventbus.StageSkipped {
		t.Errorf("rerank stage = %+v, want skipped", st)
	}
	if refs, ok := res.References(); !ok || len(refs) != 0 {
		t.Errorf("references = %v (sent: %v), want an empty list", refs, ok)
	}
	if !res.State.NoContext {
		t.Error("NoContext not set for the model fallback")
	}
	if res.Answer() == "" {
		t.Error("empty answer")
	}
}

func TestSearchWithoutKnowledgeBaseAnswersAsPlainChat(t *testing.T) {
	t.Parallel()
	provider := providertest.New(t)
	res := pipelinetest.Run(context.Background(), ragChain(t, nil), pipelinetest.Request{
		Query:  "Hello there",
		Models: pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())},
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	for _, stage := range []string{"search", "rerank", "merge"} {
		if st, _ := res.Stage(stage); st.Status != eventbus.StageSkipped {
			t.Errorf("%s stage = %+v, want skipped", stage, st)
		}
	}
	if got := lastUserMessage(t, provider.Requests()[0].Body); got != "Hello there" {
		t.Errorf("prompt = %q, want the plain question", got)
	}
}

func TestSearchUsesModeOverridesAndReportsWhatRan(t *testing.T) {
	t.Parallel()
	kb := &fakeKnowledge{hits: hitsOf("resume-0", "run-0", "plugin-0"), method: "keyword",
		degraded: "embedding endpoint unreachable; keyword search only"}
	chain := pipelinetest.Chain(t, "rag", []any{
		map[string]any{"search": map[string]any{"top_k": 7, "rrf_k": 30, "keyword_weight": 2}},
		map[string]any{"rerank": map[string]any{"reranker": "none"}},
		"merge", "chat_completion_stream",
	}, sections(nil))
	res := pipelinetest.Run(context.Background(), chain, pipelinetest.Request{
		Query: "resume", Models: pipelinetest.Models{"default": pipelinetest.Demo()}, Knowledge: kb,
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	req := kb.reqs[0]
	if req.TopK != 7 || req.RRFK != 30 || req.KeywordWeight != 2 || req.VectorWeight != 0 {
		t.Errorf("search request = %+v, want the mode's overrides", req)
	}
	st, _ := res.Stage("search")
	if want := "3 candidates (keyword); embedding endpoint unreachable; keyword search only"; st.Detail != want {
		t.Errorf("search detail = %q, want %q", st.Detail, want)
	}
}

func TestNothingFoundAnswersWithTheFixedFallbackWithoutTheModel(t *testing.T) {
	t.Parallel()
	provider := providertest.New(t)
	const text = "Nothing about that in the knowledge base."
	res := pipelinetest.Run(context.Background(),
		ragChain(t, map[string]map[string]any{"merge": {"fallback": "fixed", "fallback_text": text}}),
		pipelinetest.Request{
			Query:     "What is the capital of Mars?",
			Models:    pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())},
			Knowledge: &fakeKnowledge{},
		})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if n := len(provider.Requests()); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
	if res.Answer() != text {
		t.Errorf("answer = %q, want the fallback text", res.Answer())
	}
	refs, start, delta, end := res.Index(eventbus.TypeReferences), res.Index(eventbus.TypeAnswerStart),
		res.Index(eventbus.TypeAnswerDelta), res.Index(eventbus.TypeAnswerEnd)
	if !(refs >= 0 && refs < start && start < delta && delta < end) {
		t.Errorf("event order references=%d answer.start=%d delta=%d end=%d", refs, start, delta, end)
	}
	if st, _ := res.Stage("merge"); !strings.Contains(st.Detail, "fixed fallback") {
		t.Errorf("merge stage = %+v", st)
	}
	if _, ok := res.Stage("generate"); ok {
		t.Error("the generate stage ran after the fixed fallback")
	}
}

func TestNothingFoundLetsTheModelAnswerSayingSo(t *testing.T) {
	t.Parallel()
	provider := providertest.New(t)
	res := pipelinetest.Run(context.Background(), ragChain(t, nil), pipelinetest.Request{
		Query:     "What is the capital of Mars?",
		Models:    pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())},
		Knowledge: &fakeKnowledge{},
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	prompt := lastUserMessage(t, provider.Requests()[0].Body)
	if !strings.Contains(prompt, citation.NoPassages) || !strings.Contains(prompt, "Question: What is the capital of Mars?") {
		t.Errorf("prompt does not tell the model nothing was found:\n%s", prompt)
	}
	if st, _ := res.Stage("merge"); !strings.Contains(st.Detail, "nothing found") {
		t.Errorf("merge stage = %+v", st)
	}
	if res.Answer() == "" {
		t.Error("empty answer")
	}

	// The demo model says so too.
	res = pipelinetest.Run(context.Background(), ragChain(t, nil), pipelinetest.Request{
		Query: "What is the capital of Mars?", Models: pipelinetest.Models{"default": pipelinetest.Demo()},
		Knowledge: &fakeKnowledge{},
	})
	if !strings.Contains(res.Answer(), "found nothing about this in the knowledge base") {
		t.Errorf("demo answer = %q", res.Answer())
	}
}

var _ retrieval.Knowledge = (*fakeKnowledge)(nil)
