package plugins_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
)

// The model gets the newest rounds that fit the budget, never a reply
// without its question, and never the thinking.
func TestLoadHistoryKeepsNewestRoundsWithinBudgetWithoutThinking(t *testing.T) {
	t.Parallel()
	var history []pipeline.HistoryMessage
	for _, q := range []string{"first", "second", "third"} {
		history = append(history,
			pipeline.HistoryMessage{Role: "user", Content: q + " question " + strings.Repeat("x", 40)},
			pipeline.HistoryMessage{Role: "assistant", Content: q + " answer " + strings.Repeat("y", 40), Thinking: "<think>secret</think>"})
	}
	for _, tc := range []struct {
		name     string
		settings map[string]any
		want     []string
	}{
		{"all fit", map[string]any{"max_rounds": 5, "max_tokens": 3000}, []string{"first", "first", "second", "second", "third", "third"}},
		{"rounds bound", map[string]any{"max_rounds": 1}, []string{"third", "third"}},
		{"token budget drops the oldest and a dangling answer", map[string]any{"max_tokens": 45}, []string{"third", "third"}},
		{"disabled", map[string]any{"max_rounds": 0}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			provider := providertest.New(t)
			provider.SetDefault(providertest.Script{Chunks: providertest.Answer("ok", 1)})
			chain := pipelinetest.Chain(t, "chat", []any{map[string]any{"load_history": tc.settings}, "chat_completion_stream"}, nil)
			res := pipelinetest.Run(context.Background(), chain, pipelinetest.Request{
				Query: "now", History: history,
				Models: pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())},
			})
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			var got []string
			for _, m := range res.State.History {
				if m.Thinking != "" {
					t.Fatalf("thinking kept: %+v", m)
				}
				got = append(got, strings.Fields(m.Content)[0])
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("history = %v, want %v", got, tc.want)
			}
			if raw := string(provider.Requests()[0].Raw); strings.Contains(raw, "secret") {
				t.Fatalf("thinking reached the model: %s", raw)
			}
		})
	}
}
