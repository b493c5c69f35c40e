package plugins_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
)

func TestRAGPromptCarriesTheNumberedContextAndReferencesComeFirst(t *testing.T) {
	t.Parallel()
	provider := providertest.New(t)
	provider.SetDefault(providertest.Script{Chunks: providertest.Answer("Run go run . [1] and set keys in config.yaml [2].", 6)})
	res := pipelinetest.Run(context.Background(), ragChain(t, map[string]map[string]any{"rerank": {"reranker": "none"}}),
		pipelinetest.Request{
			Query:     "How do I run chatpipe?",
			Models:    pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())},
			Knowledge: &fakeKnowledge{hits: hitsOf("run-0", "plugin-0")},
		})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	body := provider.Requests()[0].Body
	msgs := body["messages"].([]any)
	if first := msgs[0].(map[string]any); first["role"] != "system" || first["content"] != config.DefaultSystemPrompt {
		t.Errorf("first message = %v, want the system prompt", first)
	}
	prompt := lastUserMessage(t, body)
	for _, part := range []string{
		"cite it with its number in square brackets",
		"Context:\n[1] Running chatpipe — Quick start\nRun chatpipe with go run . in the repository root.",
		"\n\n[2] Writing a plugin\nA plugin implements Name, Events and OnEvent.",
		"\n\nQuestion: How do I run chatpipe?",
	} {
		if !strings.Contains(prompt, part) {
			t.Errorf("rag prompt lacks %q:\n%s", part, prompt)
		}
	}
	refs, ok := res.References()
	if !ok || len(refs) != 2 || refs[0].Index != 1 || refs[0].ChunkID != "run-0" || refs[0].Heading != "Quick start" ||
		refs[1].Index != 2 {
		t.Errorf("references = %+v", refs)
	}
	if r, a := res.Index(eventbus.TypeReferences), res.Index(eventbus.TypeAnswerStart); r < 0 || a < 0 || r > a {
		t.Errorf("references at %d, answer.start at %d: references must come first", r, a)
	}
	if st, _ := res.Stage("merge"); !strings.HasPrefix(st.Detail, "2 candidates") {
		t.Errorf("merge detail = %q", st.Detail)
	}
}

func TestAnswerCitesOnlyExistingReferencesAtEverySplit(t *testing.T) {
	t.Parallel()
	const (
		streamedText = "Run it [1]; resume [2][7] or [0]. See [1, 9] and arrays [a]. Last [3"
		want         = "Run it [1]; resume [2] or . See [1] and arrays [a]. Last [3"
	)
	provider := providertest.New(t)
	chain := ragChain(t, map[string]map[string]any{"rerank": {"reranker": "none"}})
	for pieces := 1; pieces <= len(streamedText); pieces++ {
		chunks := append(providertest.ReasoningContent("Thinking about [5].", 2),
			providertest.Answer(streamedText, pieces)...)
		provider.Enqueue(providertest.Script{Chunks: chunks})
		res := pipelinetest.Run(context.Background(), chain, pipelinetest.Request{
			Query:     "How do I run and resume?",
			Models:    pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())},
			Knowledge: &fakeKnowledge{hits: hitsOf("run-0", "resume-0")},
		})
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if got := res.Answer(); got != want {
			t.Fatalf("%d pieces: saved answer %q, want %q", pieces, got, want)
		}
		if th := res.Thinking(); th != "<think>Thinking about [5].</think>" {
			t.Fatalf("%d pieces: thinking %q, want it unfiltered and balanced", pieces, th)
		}
		if res.Count(eventbus.TypeAnswerStart) != 1 || res.Count(eventbus.TypeAnswerEnd) != 1 ||
			res.Index(eventbus.TypeUsage) < res.Index(eventbus.TypeAnswerEnd) {
			t.Fatalf("%d pieces: answer block not balanced before usage", pieces)
		}
		for _, ev := range res.Events {
			if ev.Type == eventbus.TypeAnswerDelta && ev.Text == "" {
				t.Fatalf("%d pieces: empty answer delta", pieces)
			}
		}
	}
}

var marker = regexp.MustCompile(`\[(\d+)\]`)

func TestDefaultRAGModeAnswersOfflineWithTheDemoModel(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	entries, err := cfg.Chain(cfg.DefaultMode)
	if err != nil {
		t.Fatal(err)
	}
	var names []any
	for _, e := range entries {
		names = append(names, e.Name)
	}
	chain := pipelinetest.Chain(t, cfg.DefaultMode, names, cfg.Plugins)
	for _, tc := range []struct {
		question, label, quote string
	}{
		{"How do I resume a stream after a dropped connection?", "[demo model]", "reconnect with the Last-Event-ID header"},
		{"网络断开后如何恢复流？", "[演示模型]", "即可恢复流"},
	} {
		res := pipelinetest.Run(context.Background(), chain, pipelinetest.Request{
			Query:     tc.question,
			Models:    pipelinetest.Models{"default": pipelinetest.Demo()},
			Knowledge: &fakeKnowledge{docs: sampleDocs},
		})
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		ans := res.Answer()
		if !strings.HasPrefix(ans, tc.label) || !strings.Contains(ans, tc.quote) {
			t.Errorf("%s: answer does not quote %q:\n%s", tc.question, tc.quote, ans)
		}
		refs, _ := res.References()
		found := marker.FindAllStringSubmatch(ans, -1)
		if len(found) < 2 {
			t.Errorf("%s: answer cites %d passages, want 2 or 3:\n%s", tc.question, len(found), ans)
		}
		for _, m := range found {
			if n, _ := strconv.Atoi(m[1]); n < 1 || n > len(refs) {
				t.Errorf("%s: answer cites [%d] of %d references", tc.question, n, len(refs))
			}
		}
		if res.Index(eventbus.TypeReferences) > res.Index(eventbus.TypeAnswerStart) {
			t.Errorf("%s: references after answer.start", tc.question)
		}
		if res.Thinking() == "" {
			t.Errorf("%s: no thinking", tc.question)
		}
	}
}

func TestRAGChainIsSafeForConcurrentRequests(t *testing.T) {
	t.Parallel()
	chain := ragChain(t, nil)
	var wg sync.WaitGroup
	answers := make([]string, 8)
	for i := range answers {
		wg.Go(func() {
			res := pipelinetest.Run(context.Background(), chain, pipelinetest.Request{
				Query:     "How do I resume a stream?",
				History:   followUp,
				Models:    pipelinetest.Models{"default": pipelinetest.Demo()},
				Knowledge: &fakeKnowledge{docs: sampleDocs},
			})
			if res.Err == nil {
				answers[i] = res.Answer()
			}
		})
	}
	wg.Wait()
	for _, a := range answers {
		if a == "" || a != answers[0] {
			t.Fatalf("answers differ or are empty: %q", answers)
		}
	}
}

func TestDefaultConfigBuildsEveryMode(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	chains, err := cfg.Chains()
	if err != nil {
		t.Fatal(err)
	}
	for mode, entries := range chains {
		chain := make([]pipeline.ChainEntry, len(entries))
		for i, e := range entries {
			chain[i] = pipeline.ChainEntry{Name: e.Name, Overrides: e.Overrides}
		}
		if _, err := pipeline.Build(mode, chain, cfg.Plugins); err != nil {
			t.Errorf("mode %s: %v", mode, err)
		}
	}
}

func TestBadPluginSettingsNameTheKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		plugin   string
		settings map[string]any
		want     string
	}{
		{"rerank", map[string]any{"reranker": "magic"}, `plugins.rerank.reranker: unknown reranker "magic"`},
		{"rerank", map[string]any{"reranker": "remote"}, "plugins.rerank.remote_base_url: required"},
		{"rerank", map[string]any{"reranker": "remote", "remote_base_url": "https://key@api.jina.ai/v1"},
			"plugins.rerank.remote_base_url: put credentials in remote_api_key"},
		{"rerank", map[string]any{"threshold": 3}, "plugins.rerank.threshold"},
		{"rerank", map[string]any{"min_keep": 9}, "plugins.rerank.min_keep"},
		{"merge", map[string]any{"fallback": "silence"}, "plugins.merge.fallback"},
		{"merge", map[string]any{"fallback": "fixed", "fallback_text": ""}, "plugins.merge.fallback_text"},
		{"rewrite", map[string]any{"prompt": "no placeholder"}, "plugins.rewrite.prompt"},
		{"rewrite", map[string]any{"timeout": "0s"}, "plugins.rewrite.timeout"},
		{"search", map[string]any{"top_k": -1}, "plugins.search.top_k"},
		{"search", map[string]any{"topk": 5}, "topk"},
		{"chat_completion_stream", map[string]any{"rag_prompt": "{question} only"}, "plugins.chat_completion_stream.rag_prompt"},
	} {
		_, err := pipelinetest.BuildChain("rag", ragPlugins, sections(map[string]map[string]any{tc.plugin: tc.settings}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: error = %v, want it to contain %q", tc.plugin, tc.settings, err, tc.want)
		}
	}
}
