package example_test

import (
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
	_ "github.com/chatpipe/chatpipe/plugins"         // chat_completion_stream
	_ "github.com/chatpipe/chatpipe/plugins/example" // footer and faq
)

// footerChain is the footer in front of the built-in generator.
func footerChain(t *testing.T, settings map[string]any) *pipelinetest.Result {
	t.Helper()
	chain := pipelinetest.Chain(t, "chat", []any{"footer", "chat_completion_stream"},
		map[string]map[string]any{"footer": settings})
	model := pipelinetest.NewModel(pipelinetest.Script{Chunks: pipelinetest.Answer("Paris is the capital.", 3)})
	return pipelinetest.Run(t.Context(), chain, pipelinetest.Request{Query: "Capital of France?", Models: model})
}

func TestFooterEndsTheAnswer(t *testing.T) {
	res := footerChain(t, map[string]any{"text": " (Checked by nobody.)"})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := res.Answer(); got != "Paris is the capital. (Checked by nobody.)" {
		t.Fatalf("answer = %q", got)
	}
	deltas := res.Deltas(eventbus.TypeAnswerDelta)
	end := res.Index(eventbus.TypeAnswerEnd)
	if deltas[len(deltas)-1] != " (Checked by nobody.)" || res.Events[end-1].Text != " (Checked by nobody.)" {
		t.Fatalf("the footer is not the last delta before answer.end: %v", res.Types())
	}
}

func TestFooterSkipsShortAnswers(t *testing.T) {
	res := footerChain(t, map[string]any{"min_chars": 100})
	if got := res.Answer(); got != "Paris is the capital." {
		t.Fatalf("answer = %q", got)
	}
}

func TestFooterConfigErrorNamesTheKey(t *testing.T) {
	_, err := pipelinetest.BuildChain("chat", []any{"footer", "chat_completion_stream"},
		map[string]map[string]any{"footer": {"text": "  "}})
	if err == nil || !strings.Contains(err.Error(), "plugins.footer.text") {
		t.Fatalf("err = %v", err)
	}
}
