// Package inspect is the turn inspector's record: what each stage of the
// pipeline did for one answer — the rewritten question, the candidates
// with their keyword, vector and fused scores, what rerank kept and why,
// merge's numbered context, the prompt as sent, every model and tool call.
// A Recorder gathers it while the answer runs; the run saves it, bounded
// in size, with the assistant message.
//
// The package imports only the event vocabulary: the pipeline and the
// plugins hand it plain values.
package inspect

import (
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
)

// Turn is the record of one assistant message (the JSON the API serves).
type Turn struct {
	MessageID string           `json:"message_id"`
	TraceID   string           `json:"trace_id,omitempty"` // the OpenTelemetry trace, when tracing is on
	Mode      string           `json:"mode"`
	Status    string           `json:"status,omitempty"` // completed, stopped, failed
	Question  string           `json:"question"`
	Stages    []eventbus.Stage `json:"stages"`
	// Rewrite is set when the rewrite stage produced a standalone question.
	Rewrite *Rewrite `json:"rewrite,omitempty"`
	Search  *Search  `json:"search,omitempty"`
	Rerank  *Rerank  `json:"rerank,omitempty"`
	// Context is merge's numbered context: the passages cited as [n].
	Context []eventbus.Reference `json:"context,omitempty"`
	// Prompt is the last model call's messages as sent.
	Prompt     []Message   `json:"prompt,omitempty"`
	ModelCalls []ModelCall `json:"model_calls"`
	ToolCalls  []ToolCall  `json:"tool_calls"`
	// Truncated says the record was cut to telemetry.inspector.max_bytes;
	// TruncatedNote says what was cut.
	Truncated     bool   `json:"truncated,omitempty"`
	TruncatedNote string `json:"truncated_note,omitempty"`
}

// Rewrite is the question as asked and as rewritten.
type Rewrite struct {
	Original  string `json:"original"`
	Rewritten string `json:"rewritten"`
}

// Search is what retrieval found.
type Search struct {
	Query      string      `json:"query"`
	Method     string      `json:"method,omitempty"`   // hybrid, keyword or vector
	Degraded   string      `json:"degraded,omitempty"` // a part that failed and was left out
	Candidates []Candidate `json:"candidates"`
}

// Candidate is one passage retrieval found, with every score.
type Candidate struct {
	ChunkID      string  `json:"chunk_id"`
	DocumentID   string  `json:"document_id"`
	Title        string  `json:"title,omitempty"`
	Heading      string  `json:"heading,omitempty"`
	Page         int     `json:"page,omitempty"`
	Content      string  `json:"content,omitempty"`
	KeywordScore float64 `json:"keyword_score"`
	VectorScore  float64 `json:"vector_score"`
	FusedScore   float64 `json:"fused_score"`
	KeywordRank  int     `json:"keyword_rank,omitempty"`
	VectorRank   int     `json:"vector_rank,omitempty"`
}

// Rerank is what the rerank stage kept, and why (its stage detail: the
// reranker, threshold and notes).
type Rerank struct {
	Reason  string   `json:"reason,omitempty"`
	Kept    []Kept   `json:"kept"`
	Dropped []string `json:"dropped,omitempty"` // chunk ids of candidates not kept
}

// Kept is a candidate rerank kept, with its new score.
type Kept struct {
	ChunkID string  `json:"chunk_id"`
	Title   string  `json:"title,omitempty"`
	Score   float64 `json:"score"`
}

// Message is one message of a prompt.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ModelCall is one call of a model.
type ModelCall struct {
	Purpose      string    `json:"purpose"` // generate, rewrite, rerank
	Model        string    `json:"model"`   // the model id asked
	Entry        string    `json:"entry"`   // the models: entry
	Provider     string    `json:"provider"`
	StartedAt    time.Time `json:"started_at"`
	DurationMS   int64     `json:"duration_ms"`
	TTFTMS       int64     `json:"ttft_ms,omitempty"`
	InputTokens  int       `json:"input_tokens"`
	OutputTokens int       `json:"output_tokens"`
	Estimated    bool      `json:"usage_estimated,omitempty"`
	FinishReason string    `json:"finish_reason,omitempty"`
	Status       string    `json:"status"` // completed or failed
	Error        string    `json:"error,omitempty"`
	TraceSpanID  string    `json:"span_id,omitempty"`
}

// ToolCall is one tool call and its result.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
	Output    string `json:"output,omitempty"`
	Status    string `json:"status,omitempty"`
}
