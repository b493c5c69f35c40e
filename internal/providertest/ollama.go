package providertest

import (
	"encoding/json"
)

// ollamaDialect renders Ollama's native /api/chat stream: one JSON object
// per line with message.content / message.thinking, and a final line with
// done:true, done_reason and the eval counts.
type ollamaDialect struct{}

type (
	olLine struct {
		Model              string    `json:"model"`
		CreatedAt          string    `json:"created_at"`
		Message            olMessage `json:"message"`
		Done               bool      `json:"done"`
		DoneReason         string    `json:"done_reason,omitempty"`
		TotalDuration      int64     `json:"total_duration,omitempty"`
		LoadDuration       int64     `json:"load_duration,omitempty"`
		PromptEvalCount    int       `json:"prompt_eval_count,omitempty"`
		PromptEvalDuration int64     `json:"prompt_eval_duration,omitempty"`
		EvalCount          int       `json:"eval_count,omitempty"`
		EvalDuration       int64     `json:"eval_duration,omitempty"`
	}
	olMessage struct {
		Role      string       `json:"role"`
		Content   string       `json:"content"`
		Thinking  string       `json:"thinking,omitempty"`
		ToolCalls []olToolCall `json:"tool_calls,omitempty"`
	}
	olToolCall struct {
		Function struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"function"`
	}
)

func newOLLine(model string) olLine {
	if model == "" {
		model = "fake-model"
	}
	return olLine{Model: model, CreatedAt: "2024-01-01T00:00:00.000000Z", Message: olMessage{Role: "assistant"}}
}

func ndjson(v any) []byte { return append(mustJSON(v), '\n') }

func (ollamaDialect) contentType() string { return "application/x-ndjson" }

func (ollamaDialect) errorBody(_ int, e ErrorObject) []byte {
	return mustJSON(map[string]string{"error": e.Message})
}

func (ollamaDialect) preamble(string) []byte { return nil }

func (ollamaDialect) chunk(model string, c Chunk) []byte {
	l := newOLLine(model)
	l.Message.Content = c.Content
	l.Message.Thinking = c.ReasoningContent + c.Reasoning
	for _, tc := range c.ToolCalls {
		var w olToolCall
		w.Function.Name = tc.Name
		if json.Unmarshal([]byte(tc.Arguments), &w.Function.Arguments) != nil || w.Function.Arguments == nil {
			w.Function.Arguments = map[string]any{}
		}
		l.Message.ToolCalls = append(l.Message.ToolCalls, w)
	}
	return ndjson(l)
}

func (ollamaDialect) streamError(e ErrorObject) []byte {
	return ndjson(map[string]string{"error": e.Message})
}

func (ollamaDialect) end(model string, sc Script) []byte {
	if sc.NoDone {
		return nil
	}
	l := newOLLine(model)
	l.Done = true
	l.DoneReason = "stop"
	for _, c := range sc.Chunks {
		if c.FinishReason != "" {
			l.DoneReason = c.FinishReason
		}
	}
	l.TotalDuration, l.LoadDuration, l.PromptEvalDuration, l.EvalDuration = 5e8, 1e7, 1e8, 3e8
	if sc.Usage != nil {
		l.PromptEvalCount, l.EvalCount = sc.Usage.PromptTokens, sc.Usage.CompletionTokens
	}
	return ndjson(l)
}
