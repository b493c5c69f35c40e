// Package approval is the contract that carries a user's decisions on tool
// calls (agent_loop's tools marked require_approval) from the API to the
// generation that asked. The run lifecycle implements it; the asking plugin
// uses it through ChatManage.Approvals. It is a leaf (standard library
// only).
package approval

// Broker carries the user's decisions on tool calls to the run that asked
// for them. The run lifecycle provides it, so that a decision posted to the
// API reaches the generation; the asking plugin announces the request,
// bounds the wait and reports the decision on the stream.
type Broker interface {
	// Open registers tool call id as waiting for a decision — before the
	// request is announced, so that no decision can arrive too early — and
	// returns the channel the user's decision (eventbus.DecisionAllow or
	// eventbus.DecisionDeny) arrives on, at most once.
	Open(toolCallID string) <-chan string
	// Close ends the wait for id (decided, timed out or stopped); a
	// decision arriving later is refused.
	Close(toolCallID string)
}
