package history

// Record is the durable account of how an assistant message was made,
// saved with it so that it outlives the stream's replay window.
type Record struct {
	// ToolCalls are the tool calls of an agent's answer, in the order
	// they were made.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Stages are the pipeline stages that ran, in order, with their
	// timings.
	Stages []StageTiming `json:"stages,omitempty"`
	// Cited are the indexes of the references the answer cited ([n]
	// markers), ascending.
	Cited []int `json:"cited,omitempty"`
}

// ToolCall is one tool call of an answer and its result.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// Turn is the model call (1, 2, …) that asked for the tool: the calls
	// of one turn were asked for together, and their results came back
	// before the next turn.
	Turn   int    `json:"turn,omitempty"`
	Output string `json:"output"`
	// Status is the result's: completed, failed or denied ("" = the
	// answer ended before a result came).
	Status string `json:"status"`
	// DurationMS runs from the call's complete arguments to its result,
	// approval included.
	DurationMS int64 `json:"duration_ms"`
}

// StageTiming is one pipeline stage's outcome.
type StageTiming struct {
	Name      string `json:"name"`
	Status    string `json:"status"` // completed, skipped or failed
	ElapsedMS int64  `json:"elapsed_ms"`
	Detail    string `json:"detail,omitempty"`
}

// Empty reports whether r records nothing.
func (r *Record) Empty() bool {
	return r == nil || len(r.ToolCalls) == 0 && len(r.Stages) == 0 && len(r.Cited) == 0
}
