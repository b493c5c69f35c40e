// Package eventbus defines chatpipe's typed event vocabulary (the SSE wire
// contract) and the per-stream bus that carries events from plugins to the
// stream store, the logger and the persister.
//
// The package imports nothing else from chatpipe.
package eventbus

// Type names an event on the wire (the SSE "event:" line and the JSON "type").
type Type string

// The event vocabulary. Developers may add types; these are never renamed.
const (
	TypeStreamStarted  Type = "stream.started"
	TypeStage          Type = "stage"
	TypeQueryRewritten Type = "query.rewritten"
	TypeReferences     Type = "references"
	TypeThinkingStart  Type = "thinking.start"
	TypeThinkingDelta  Type = "thinking.delta"
	TypeThinkingEnd    Type = "thinking.end"
	TypeAnswerStart    Type = "answer.start"
	TypeAnswerDelta    Type = "answer.delta"
	TypeAnswerEnd      Type = "answer.end"
	TypeToolCallStart  Type = "tool_call.start"
	TypeToolCallDelta  Type = "tool_call.delta"
	TypeToolCallEnd    Type = "tool_call.end"
	TypeToolResult     Type = "tool_result"
	TypeUsage          Type = "usage"
	TypeError          Type = "error"
	TypeStreamFinished Type = "stream.finished"
	// TypeResyncRequired is sent only to a resuming reader whose replay
	// window is gone; it is never stored in a stream.
	TypeResyncRequired Type = "resync_required"
)

// Approvals of tool calls (tools marked require_approval in agent mode).
const (
	// TypeToolCallApprovalRequest asks the user to allow or deny a tool
	// call before it runs.
	TypeToolCallApprovalRequest Type = "tool_call.approval_request"
	// TypeToolCallApprovalDecision says how an approval request was
	// decided: allowed or denied by the user, or denied by a timeout or a
	// stop.
	TypeToolCallApprovalDecision Type = "tool_call.approval_decision"
)

// Session metadata and history compaction: model jobs that run after a
// turn, off the token path. Their events come before stream.finished when
// the job ends while the stream is open (the run waits a bounded time for
// it, see background.stream_wait); otherwise the result is only saved and
// shows on the next read.
const (
	// TypeSessionUpdated says the session changed while the answer
	// streamed: its generated title.
	TypeSessionUpdated Type = "session.updated"
	// TypeHistoryCompacted says older messages of the session were
	// summarised: later prompts send the summary in their place.
	TypeHistoryCompacted Type = "history.compacted"
)

// AllTypes lists the built-in types, in wire-contract order.
var AllTypes = []Type{
	TypeStreamStarted, TypeStage, TypeQueryRewritten, TypeReferences,
	TypeThinkingStart, TypeThinkingDelta, TypeThinkingEnd,
	TypeAnswerStart, TypeAnswerDelta, TypeAnswerEnd,
	TypeToolCallStart, TypeToolCallDelta, TypeToolCallEnd, TypeToolResult,
	TypeToolCallApprovalRequest, TypeToolCallApprovalDecision,
	TypeUsage, TypeError, TypeSessionUpdated, TypeHistoryCompacted, TypeStreamFinished,
}

// Stream statuses carried by stream.finished and saved on the assistant message.
const (
	StatusCompleted = "completed"
	StatusStopped   = "stopped"
	StatusFailed    = "failed"
)

// Stage statuses carried by stage events.
const (
	StageStarted  = "started"
	StageFinished = "finished"
	StageSkipped  = "skipped"
	StageFailed   = "failed"
)

// Event is one typed event of a stream. Seq, StreamID and Time are filled
// in by the recorder; emitters set Type and the payload.
//
// Text events (thinking.*, answer.*) carry their content in Text so the hot
// path of a streamed token needs no payload allocation; every other type
// carries a Payload.
type Event struct {
	Type      Type
	Seq       int64
	StreamID  string
	Time      int64 // unix milliseconds
	Placement *Placement
	Text      string
	Payload   Payload
}

// Placement locates an event in multi-model or agent runs.
type Placement struct {
	Model string `json:"model,omitempty"`
	Turn  int    `json:"turn,omitempty"`
	Tab   int    `json:"tab,omitempty"`
}

// Payload is the structured part of an event. Its JSON fields are merged
// into the event object next to seq, type, stream_id and ts. Payloads
// defined outside this package travel as Custom.
type Payload interface {
	isPayload()
}

// Custom wraps a payload defined outside this package. Its Value must
// marshal to a JSON object.
type Custom struct{ Value any }

// StreamStarted is the payload of stream.started.
type StreamStarted struct {
	SessionID     string `json:"session_id"`
	MessageID     string `json:"message_id"`
	UserMessageID string `json:"user_message_id"`
	Mode          string `json:"mode"`
	// Models lists, when several models answer side by side, each model
	// and the message its answer is saved as (the first is MessageID).
	// Their events carry placement.model.
	Models []ModelAnswer `json:"models,omitempty"`
}

// ModelAnswer is one model answering side by side and its message.
type ModelAnswer struct {
	Model     string `json:"model"`
	MessageID string `json:"message_id"`
}

// Stage is the payload of stage: a pipeline stage's progress.
type Stage struct {
	Name      string `json:"name"`
	Status    string `json:"status"`
	ElapsedMS int64  `json:"elapsed_ms"`
	Detail    string `json:"detail,omitempty"`
}

// QueryRewritten is the payload of query.rewritten.
type QueryRewritten struct {
	Original  string `json:"original"`
	Rewritten string `json:"rewritten"`
}

// Reference is one cited passage; Index is the [n] used in the answer.
type Reference struct {
	Index      int     `json:"index"`
	ChunkID    string  `json:"chunk_id"`
	DocumentID string  `json:"document_id"`
	Title      string  `json:"title"`
	Heading    string  `json:"heading,omitempty"` // the section the passage starts in, if any
	Page       int     `json:"page,omitempty"`    // the page (PDF) or slide (PPTX) the passage starts on; 0 = none
	Content    string  `json:"content"`
	Score      float64 `json:"score"`
}

// References is the payload of references.
type References struct {
	Items []Reference `json:"items"`
}

// ToolCall is the payload of tool_call.start, .delta (an arguments
// fragment) and .end (the whole arguments).
type ToolCall struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name,omitempty"`
	Arguments  string `json:"arguments,omitempty"`
}

// ToolResult is the payload of tool_result.
type ToolResult struct {
	ToolCallID string `json:"tool_call_id"`
	Output     string `json:"output"`
	Status     string `json:"status"`
}

// Tool result statuses carried by tool_result.
const (
	ToolCompleted = "completed"
	ToolFailed    = "failed" // the tool errored, panicked, timed out or was stopped
	ToolDenied    = "denied" // the call needed an approval and did not get it
)

// ToolApproval is the payload of tool_call.approval_request (the call
// waiting, and when an unanswered request is denied) and of
// tool_call.approval_decision (Decision and Reason).
type ToolApproval struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name,omitempty"`
	Arguments  string `json:"arguments,omitempty"`
	// ExpiresAt is when an unanswered request is denied, in unix
	// milliseconds (request only; 0 = never).
	ExpiresAt int64 `json:"expires_at,omitempty"`
	// Decision is allow or deny (decision only).
	Decision string `json:"decision,omitempty"`
	// Reason says who decided: user, timeout, stopped or unavailable
	// (decision only).
	Reason string `json:"reason,omitempty"`
}

// Approval decisions and their reasons.
const (
	DecisionAllow    = "allow"
	DecisionDeny     = "deny"
	DecidedByUser    = "user"
	DecidedByTimeout = "timeout"
	DecidedByStop    = "stopped"
	// DecidedUnavailable: the run has no way to ask (no approver).
	DecidedUnavailable = "unavailable"
)

// Usage is the payload of usage.
type Usage struct {
	PromptTokens     int   `json:"prompt_tokens"`
	CompletionTokens int   `json:"completion_tokens"`
	ReasoningTokens  int   `json:"reasoning_tokens"`
	TTFTMS           int64 `json:"ttft_ms"`
	TotalMS          int64 `json:"total_ms"`
	// Estimated is true when the provider sent no usage (a stopped or
	// failed call ends before its usage chunk): the token counts are then
	// counted from the text sent and streamed, not the provider's own.
	Estimated bool `json:"estimated,omitempty"`
}

// Error is the payload of error. Message is written for the user and never
// carries a secret or a stack trace.
type Error struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Stage     string `json:"stage,omitempty"`
	Retryable bool   `json:"retryable"`
}

// Finished is the payload of stream.finished, always the last event.
type Finished struct {
	Status    string `json:"status"`
	Reason    string `json:"reason,omitempty"`
	MessageID string `json:"message_id"`
}

// SessionUpdated is the payload of session.updated.
type SessionUpdated struct {
	SessionID string `json:"session_id"`
	Title     string `json:"title"`
	// TitleSource is "generated" (by the model) or "fallback" (the
	// question, trimmed: the model is the demo one or failed).
	TitleSource string `json:"title_source"`
}

// HistoryCompacted is the payload of history.compacted.
type HistoryCompacted struct {
	SessionID     string `json:"session_id"`
	SummaryID     string `json:"summary_id"`
	FromMessageID string `json:"from_message_id"` // the first message the summary covers
	ToMessageID   string `json:"to_message_id"`   // the last one
	Messages      int    `json:"messages"`        // how many it covers
	TokensBefore  int    `json:"tokens_before"`   // estimated tokens of what it replaces
	TokensAfter   int    `json:"tokens_after"`    // estimated tokens of the summary
}

func (Custom) isPayload()           {}
func (StreamStarted) isPayload()    {}
func (Stage) isPayload()            {}
func (QueryRewritten) isPayload()   {}
func (References) isPayload()       {}
func (ToolCall) isPayload()         {}
func (ToolResult) isPayload()       {}
func (ToolApproval) isPayload()     {}
func (Usage) isPayload()            {}
func (Error) isPayload()            {}
func (Finished) isPayload()         {}
func (SessionUpdated) isPayload()   {}
func (HistoryCompacted) isPayload() {}

// IsText reports whether t carries its content in Event.Text.
func (t Type) IsText() bool {
	switch t {
	case TypeThinkingStart, TypeThinkingDelta, TypeThinkingEnd,
		TypeAnswerStart, TypeAnswerDelta, TypeAnswerEnd:
		return true
	}
	return false
}

// Delta builds a thinking.delta or answer.delta event.
func Delta(t Type, content string) Event { return Event{Type: t, Text: content} }

// Of builds an event of type t with payload p.
func Of(t Type, p Payload) Event { return Event{Type: t, Payload: p} }
