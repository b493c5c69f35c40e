package example_test

import (
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
)

func TestFAQAnswersKnownQuestionsWithoutTheModel(t *testing.T) {
	chain := pipelinetest.Chain(t, "chat", []any{"faq", "chat_completion_stream"},
		map[string]map[string]any{"faq": {"entries": []any{
			map[string]any{"question": "What are your opening hours?", "answer": "9 to 5, Monday to Friday."},
		}}})
	model := pipelinetest.NewModel()

	known := pipelinetest.Run(t.Context(), chain, pipelinetest.Request{Query: "what are your  opening hours", Models: model})
	if known.Answer() != "9 to 5, Monday to Friday." || len(model.Calls()) != 0 {
		t.Fatalf("answer %q after %d model calls", known.Answer(), len(model.Calls()))
	}
	if st, _ := known.Stage("faq"); st.Detail != "answered from the FAQ" {
		t.Fatalf("faq stage = %+v", st)
	}

	other := pipelinetest.Run(t.Context(), chain, pipelinetest.Request{Query: "Where are you?", Models: model})
	if other.Answer() != "Hello from the scripted model." || len(model.Calls()) != 1 {
		t.Fatalf("answer %q after %d model calls", other.Answer(), len(model.Calls()))
	}
	if st, _ := other.Stage("faq"); st.Status != eventbus.StageSkipped {
		t.Fatalf("faq stage = %+v", st)
	}
}
