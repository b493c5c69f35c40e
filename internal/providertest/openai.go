package providertest

import (
	"encoding/json"
)

// openAIDialect renders chat-completions SSE as OpenAI sends it: a
// role-only first chunk, one "data:" line per chunk followed by a blank
// line, a usage-only chunk with empty choices, then "data: [DONE]".
type openAIDialect struct{}

// Wire shapes, with the fields OpenAI sends that clients must skip
// (id, object, created, model, system_fingerprint, logprobs).
type (
	oaChunk struct {
		ID                string     `json:"id"`
		Object            string     `json:"object"`
		Created           int64      `json:"created"`
		Model             string     `json:"model"`
		SystemFingerprint string     `json:"system_fingerprint"`
		Choices           []oaChoice `json:"choices"`
		Usage             *oaUsage   `json:"usage,omitempty"`
	}
	oaChoice struct {
		Index        int             `json:"index"`
		Delta        oaDelta         `json:"delta"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
	}
	oaDelta struct {
		Role             string       `json:"role,omitempty"`
		Content          *string      `json:"content,omitempty"`
		ReasoningContent string       `json:"reasoning_content,omitempty"`
		Reasoning        string       `json:"reasoning,omitempty"`
		ToolCalls        []oaToolCall `json:"tool_calls,omitempty"`
	}
	oaToolCall struct {
		Index    int    `json:"index"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function struct {
			Name      string `json:"name,omitempty"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	oaUsage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	}
	oaError struct {
		Error oaErrorBody `json:"error"`
	}
	oaErrorBody struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
)

func newOAChunk(model string) oaChunk {
	if model == "" {
		model = "fake-model"
	}
	return oaChunk{ID: "chatcmpl-fake", Object: "chat.completion.chunk", Created: 1700000000, Model: model,
		SystemFingerprint: "fp_fake"}
}

// ChunkJSON renders c as the JSON of an OpenAI stream chunk, for Raw
// scripts: "data: " + ChunkJSON(c) + "\n\n".
func ChunkJSON(c Chunk) string { return string(mustJSON(renderChunk("", c))) }

// UsageJSON renders the usage-only chunk OpenAI sends last.
func UsageJSON(u Usage) string { return string(mustJSON(renderUsage("", u))) }

// ErrorJSON renders an OpenAI error object: {"error":{…}}.
func ErrorJSON(e ErrorObject) string { return string(mustJSON(renderError(e))) }

func renderChunk(model string, c Chunk) oaChunk {
	ch := newOAChunk(model)
	d := oaDelta{ReasoningContent: c.ReasoningContent, Reasoning: c.Reasoning}
	if c.Content != "" || (c.ReasoningContent == "" && c.Reasoning == "" && len(c.ToolCalls) == 0) {
		content := c.Content
		d.Content = &content
	}
	for _, tc := range c.ToolCalls {
		var w oaToolCall
		w.Index, w.ID, w.Function.Name, w.Function.Arguments = tc.Index, tc.ID, tc.Name, tc.Arguments
		if tc.ID != "" {
			w.Type = "function"
		}
		d.ToolCalls = append(d.ToolCalls, w)
	}
	choice := oaChoice{Delta: d, Logprobs: json.RawMessage("null")}
	if c.FinishReason != "" {
		fr := c.FinishReason
		choice.FinishReason = &fr
	}
	ch.Choices = []oaChoice{choice}
	return ch
}

func renderUsage(model string, u Usage) oaChunk {
	ch := newOAChunk(model)
	ch.Choices = []oaChoice{}
	ch.Usage = &oaUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.total()}
	ch.Usage.PromptTokensDetails.CachedTokens = u.CachedTokens
	ch.Usage.CompletionTokensDetails.ReasoningTokens = u.ReasoningTokens
	return ch
}

func renderError(e ErrorObject) oaError {
	body := oaErrorBody{Message: e.Message, Type: e.Type}
	if e.Code != "" {
		code := e.Code
		body.Code = &code
	}
	return oaError{Error: body}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func sseData(v any) []byte {
	b := append([]byte("data: "), mustJSON(v)...)
	return append(b, '\n', '\n')
}

func (openAIDialect) contentType() string { return "text/event-stream; charset=utf-8" }

func (openAIDialect) errorBody(_ int, e ErrorObject) []byte { return mustJSON(renderError(e)) }

func (openAIDialect) preamble(model string) []byte {
	ch := newOAChunk(model)
	empty := ""
	ch.Choices = []oaChoice{{Delta: oaDelta{Role: "assistant", Content: &empty}, Logprobs: json.RawMessage("null")}}
	return sseData(ch)
}

func (openAIDialect) chunk(model string, c Chunk) []byte { return sseData(renderChunk(model, c)) }

func (openAIDialect) streamError(e ErrorObject) []byte { return sseData(renderError(e)) }

func (openAIDialect) end(model string, sc Script) []byte {
	var b []byte
	if sc.Usage != nil {
		b = sseData(renderUsage(model, *sc.Usage))
	}
	if !sc.NoDone {
		b = append(b, "data: [DONE]\n\n"...)
	}
	return b
}
