package plugins_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
)

// The model gets the newest rounds that fit the budget, never a reply
// without its question, and never the thinking.
func TestLoadHistoryKeepsNewestRoundsWithinBudgetWithoutThinking(t *testing.T) {
	t.Parallel()
	var history []conversation.Message
	for _, q := range []string{"first", "second", "third"} {
		history = append(history,
			conversation.Message{Role: "user", Content: q + " question " + strings.Repeat("x", 40)},
			conversation.Message{Role: "assistant", Content: q + " answer " + strings.Repeat("y", 40), Thinking: "<think>secret</think>"})
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

// Whatever the reader returns, the model gets alternating roles: a
// question without its answer gets a marked empty answer, an answer
// without its question is dropped, and answers that did not complete are
// marked rather than left out.
func TestLoadHistoryAlternatesRolesAndMarksIncompleteAnswers(t *testing.T) {
	t.Parallel()
	history := []conversation.Message{
		{Role: "assistant", Content: "orphan answer"},
		{Role: "user", Content: "q1"},
		{Role: "user", Content: "q2"},
		{Role: "assistant", Content: "half", Status: "failed"},
		{Role: "user", Content: "q3"},
		{Role: "assistant", Content: "", Status: "stopped"},
		{Role: "user", Content: "dangling"},
	}
	provider := providertest.New(t)
	provider.SetDefault(providertest.Script{Chunks: providertest.Answer("ok", 1)})
	chain := pipelinetest.Chain(t, "chat", []any{"load_history", "chat_completion_stream"}, nil)
	res := pipelinetest.Run(context.Background(), chain, pipelinetest.Request{
		Query: "now", History: history,
		Models: pipelinetest.Models{"default": pipelinetest.OpenAI(t, provider.BaseURL())},
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	var got []string
	for _, m := range res.State.History {
		got = append(got, m.Role+":"+m.Content)
	}
	want := []string{
		"user:q1", "assistant:[No answer: this reply ended before any text was written.]",
		"user:q2", "assistant:half\n\n[This reply is incomplete: it ended before it was finished.]",
		"user:q3", "assistant:[No answer: this reply ended before any text was written.]",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("history =\n%q\nwant\n%q", got, want)
	}
}
