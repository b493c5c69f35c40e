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

// Model calls and streamed tool output (issue 13, agent loop and
// mid-stream provider retry).
const (
	// TypeModelCallStarted opens one attempt of a model call: every event
	// the attempt streams follows it, up to its model_call.finished.
	TypeModelCallStarted Type = "model_call.started"
	// TypeModelCallFinished closes an attempt. When it is not committed
	// (the provider stream broke and a new attempt follows), readers drop
	// the text and tool calls the attempt streamed since its
	// model_call.started: the saved answer never holds them.
	TypeModelCallFinished Type = "model_call.finished"
	// TypeToolCallOutputDelta is a fragment of a running tool's output,
	// before its tool_result (which carries the whole output).
	TypeToolCallOutputDelta Type = "tool_call.output.delta"
	// Research mode (plugins research_plan, research_run, research_report).
	// Events of the planner's model call carry origin [{agent: plan}]; every
	// event of a sub-researcher carries origin [{agent: sub, id, index}].
	// TypeResearchPlan lists the sub-questions the research will answer,
	// or, when the request was ambiguous, the clarifying question asked
	// instead.
	TypeResearchPlan Type = "research.plan"
	// TypeResearchSubagent reports a sub-researcher's progress: started,
	// then finished or failed, with its question (carries the origin of
	// the sub-researcher it is about).
	TypeResearchSubagent Type = "research.subagent"
	// Session metadata and history compaction: model jobs that run after a
	// turn, off the token path. Their events come before stream.finished when
	// the job ends while the stream is open (the run waits a bounded time for
	// it, see background.stream_wait); otherwise the result is only saved and
	// shows on the next read.
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
	TypeModelCallStarted, TypeModelCallFinished, TypeToolCallOutputDelta,
	TypeResearchPlan, TypeResearchSubagent,
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
// in by the stream's Bus as it publishes the event; emitters set Type and
// the payload.
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
	// Origin, set on the events of a subagent, is the chain of agents that
	// emitted it, from the outermost in: a frontend nests and collapses
	// the events by it. Empty for the main answer's events. Hops are
	// shared between events: never modify one in place.
	Origin  []Hop
	Text    string
	Payload Payload
}

// Hop is one agent of an event's origin chain.
type Hop struct {
	Agent string `json:"agent"`           // the kind of agent: plan, sub
	ID    string `json:"id,omitempty"`    // unique on the stream
	Index int    `json:"index,omitempty"` // its position among its siblings, from 1
}

// IsSub reports whether ev was emitted by a subagent (it has an origin).
func (ev *Event) IsSub() bool { return len(ev.Origin) > 0 }

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
	// TraceID is the OpenTelemetry trace of the request (tracing on), so
	// a client or an operator can look the answer up in their tracing tool.
	TraceID string `json:"trace_id,omitempty"`
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
	Name string `json:"name"`
	// Plugin is the plugin running the stage (telemetry: per-plugin
	// durations and spans; a stage may be handled by several plugins).
	Plugin    string `json:"plugin,omitempty"`
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

// ModelCall is the payload of model_call.started (Attempt only) and
// model_call.finished.
type ModelCall struct {
	// Attempt counts the attempts of this model call, from 1.
	Attempt int `json:"attempt"`
	// Status is how the attempt ended: completed, timeout, malformed or
	// failed (finished only).
	Status string `json:"status,omitempty"`
	// Committed is false when the attempt's output is withdrawn: the
	// stream broke after partial output and the call is tried again.
	// Readers then drop what the attempt streamed (finished only).
	Committed *bool `json:"committed,omitempty"`
}

// Model call statuses carried by model_call.finished.
const (
	ModelCallCompleted = "completed"
	ModelCallTimeout   = "timeout"   // the provider stream stalled past a deadline
	ModelCallMalformed = "malformed" // the provider sent a chunk that does not parse
	ModelCallFailed    = "failed"    // any other failure (a dropped connection, an error object, a stop)
)

// ToolOutput is the payload of tool_call.output.delta.
type ToolOutput struct {
	ToolCallID string `json:"tool_call_id"`
	Output     string `json:"output"`
}

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

func (Custom) isPayload()         {}
func (StreamStarted) isPayload()  {}
func (Stage) isPayload()          {}
func (QueryRewritten) isPayload() {}
func (References) isPayload()     {}
func (ToolCall) isPayload()       {}
func (ToolResult) isPayload()     {}
func (ToolApproval) isPayload()   {}
func (Usage) isPayload()          {}
func (ModelCall) isPayload()      {}
func (ToolOutput) isPayload()     {}
func (Error) isPayload()          {}
func (Finished) isPayload()       {}

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

func (SessionUpdated) isPayload()   {}
func (HistoryCompacted) isPayload() {}

// ResearchPlan is the payload of research.plan.
type ResearchPlan struct {
	// Questions are the sub-questions, in order; the sub-researcher of
	// Questions[i] has origin index i+1.
	Questions []string `json:"questions,omitempty"`
	// Clarification, when set, is the question asked back instead of a
	// plan; the user's next message answers it.
	Clarification string `json:"clarification,omitempty"`
}

// ResearchSubagent is the payload of research.subagent.
type ResearchSubagent struct {
	Question string `json:"question"`
	Status   string `json:"status"`           // started, finished or failed
	Detail   string `json:"detail,omitempty"` // e.g. "2 model calls, 1 tool call", or why it failed
	// References counts the passages it found (finished only).
	References int `json:"references,omitempty"`
}

func (ResearchPlan) isPayload()     {}
func (ResearchSubagent) isPayload() {}

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

// Finished builds the payload of model_call.finished.
func (c ModelCall) Finished(status string, committed bool) ModelCall {
	c.Status, c.Committed = status, &committed
	return c
}
