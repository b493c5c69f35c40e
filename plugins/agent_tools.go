package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/tools"
)

// errToolTimeout ends a tool call that ran past its timeout.
var errToolTimeout = errors.New("tool call timed out")

// toolOutcome is the result of one tool call.
type toolOutcome struct {
	index  int // position in the cycle's calls, from 0
	call   schema.ToolCall
	output string // the tool's output, or for a failure the reason
	status string // eventbus.ToolCompleted, ToolFailed or ToolDenied
	refs   int    // references collected when the call ended
}

// forModel is what the model reads: the output, or the failure marked as
// such so that it is not taken for data.
func (o toolOutcome) forModel() string {
	switch o.status {
	case eventbus.ToolCompleted:
		return o.output
	case eventbus.ToolDenied:
		return o.output
	default:
		return "Error: " + o.output
	}
}

// toolBatch runs one cycle's tool calls. Each call starts as soon as the
// loop hands it over — while the model may still be streaming, when its
// arguments are complete — asking for approval first when its tool needs
// one, without holding up the other calls. collect then streams each
// outcome as a tool_result as soon as it is known (completion order),
// preceded by a references event when the call found passages, and
// returns the outcomes in call order. Every call gets exactly one result,
// also when the run is stopped.
type toolBatch struct {
	r        *agentRun
	ctx      context.Context
	cancel   context.CancelFunc // stops the calls still running
	turn     int
	calls    map[int]schema.ToolCall // started calls by position
	failed   []toolOutcome           // calls that could not start
	results  chan toolOutcome        // the outcomes of running calls
	abandon  chan struct{}           // closed when collect returns: late senders give up
	reported int                     // references announced so far
}

func (r *agentRun) newToolBatch(ctx context.Context, turn int) *toolBatch {
	ctx, cancel := context.WithCancel(ctx)
	return &toolBatch{r: r, ctx: ctx, cancel: cancel, turn: turn, calls: map[int]schema.ToolCall{},
		results: make(chan toolOutcome), abandon: make(chan struct{}), reported: r.refs.Len()}
}

// start starts call i of the cycle (from 0), once.
func (b *toolBatch) start(i int, call schema.ToolCall) {
	if _, started := b.calls[i]; started {
		return
	}
	b.calls[i] = call
	r := b.r
	c, err := r.check(call)
	if err != nil {
		b.failed = append(b.failed, toolOutcome{index: i, call: call, output: err.Error(), status: eventbus.ToolFailed})
		return
	}
	var decision <-chan string
	if c.RequireApproval {
		decision = r.askApproval(b.turn, i+1, call)
	}
	env := tools.NewEnv(r.cm, r.refs, call.ID)
	env.StreamOutput(func(text string) {
		r.emitPlaced(eventbus.Of(eventbus.TypeToolCallOutputDelta,
			eventbus.ToolOutput{ToolCallID: call.ID, Output: text}), b.turn, i+1)
	})
	r.stragglers.Add(1)
	go func() {
		defer r.stragglers.Done()
		if c.RequireApproval {
			if out, denied := r.awaitApproval(b.ctx, b.turn, i+1, call, decision); denied {
				b.send(out)
				return
			}
		}
		b.send(r.call(b.ctx, c, env, i, call))
	}()
}

// send hands a running call's outcome to collect.
func (b *toolBatch) send(o toolOutcome) {
	select {
	case b.results <- o:
	case <-b.abandon:
	}
}

// collect waits for the outcome of every started call and returns them in
// call order. Called once, on every path of a cycle that started calls.
func (b *toolBatch) collect() []toolOutcome {
	defer b.cancel()
	defer close(b.abandon)
	r := b.r
	byIndex := make(map[int]toolOutcome, len(b.calls))
	for n := range len(b.calls) {
		var o toolOutcome
		if n < len(b.failed) {
			o = b.failed[n]
		} else {
			o = <-b.results
		}
		if o.refs > b.reported { // the call found passages: announce them before its result
			b.reported = o.refs
			items := r.refs.Items()[:o.refs]
			r.emitPlaced(eventbus.Of(eventbus.TypeReferences, eventbus.References{Items: items}), b.turn, o.index+1)
		}
		o.output = tools.Truncate(o.output, r.p.cfg.MaxResultChars)
		r.emitPlaced(eventbus.Of(eventbus.TypeToolResult,
			eventbus.ToolResult{ToolCallID: o.call.ID, Output: o.output, Status: o.status}), b.turn, o.index+1)
		byIndex[o.index] = o
	}
	outcomes := make([]toolOutcome, 0, len(byIndex))
	for _, i := range slices.Sorted(maps.Keys(byIndex)) {
		outcomes = append(outcomes, byIndex[i])
	}
	return outcomes
}

// check finds the called tool and checks the arguments are JSON.
func (r *agentRun) check(call schema.ToolCall) (*tools.Configured, error) {
	c, ok := r.tools.Lookup(call.Function.Name)
	if !ok {
		return nil, fmt.Errorf("there is no tool named %q (tools: %s)", call.Function.Name, toolNames(r.tools))
	}
	if args := strings.TrimSpace(call.Function.Arguments); args != "" && !json.Valid([]byte(args)) {
		return nil, errors.New("the arguments are not valid JSON; call the tool again with a JSON object")
	}
	return c, nil
}

// call runs one tool call within its timeout. A panic, an error and a
// timeout all become a failed outcome; at its deadline (or a stop) the
// outcome is failed at once, even if the tool has not returned yet (it is
// waited for when the run ends).
func (r *agentRun) call(ctx context.Context, c *tools.Configured, env *tools.Env, index int, call schema.ToolCall) toolOutcome {
	ctx, cancel := context.WithTimeoutCause(ctx, c.Timeout, errToolTimeout)
	defer cancel()
	ctx, span := startToolSpan(ctx, c.Name(), call)
	done := make(chan toolOutcome, 1)
	r.stragglers.Add(1)
	go func() {
		defer r.stragglers.Done()
		o := toolOutcome{index: index, call: call, status: eventbus.ToolFailed}
		defer func() {
			if v := recover(); v != nil {
				o.output = fmt.Sprintf("the tool %s failed unexpectedly", c.Name())
			}
			endToolSpan(ctx, span, o.status, o.output)
			done <- o
		}()
		out, err := c.Tool.Run(ctx, env, call.Function.Arguments)
		o.refs = r.refs.Len()
		switch {
		case ctx.Err() != nil:
			o.output = interruption(ctx, c)
		case err != nil:
			o.output = err.Error()
		default:
			o.output, o.status = out, eventbus.ToolCompleted
		}
	}()
	select {
	case o := <-done:
		return o
	case <-ctx.Done():
		return toolOutcome{index: index, call: call, output: interruption(ctx, c), status: eventbus.ToolFailed}
	}
}

// interruption says why a call's context ended.
func interruption(ctx context.Context, c *tools.Configured) string {
	if errors.Is(context.Cause(ctx), errToolTimeout) {
		return fmt.Sprintf("the tool %s did not finish within %s", c.Name(), c.Timeout)
	}
	return "the call was stopped"
}

// askApproval announces that a call waits for the user's decision and
// returns where the decision arrives (nil when no one can answer).
func (r *agentRun) askApproval(turn, tab int, call schema.ToolCall) <-chan string {
	var decision <-chan string
	if r.cm.Approvals != nil {
		decision = r.cm.Approvals.Open(call.ID)
	}
	r.emitPlaced(eventbus.Of(eventbus.TypeToolCallApprovalRequest, eventbus.ToolApproval{
		ToolCallID: call.ID, Name: call.Function.Name, Arguments: call.Function.Arguments,
		ExpiresAt: time.Now().Add(r.p.cfg.ApprovalTimeout).UnixMilli(),
	}), turn, tab)
	return decision
}

// awaitApproval waits for the decision on a call: the user's, or a denial
// when approval_timeout passes or the run is stopped. It reports the
// decision on the stream and, for a denial, the call's outcome.
func (r *agentRun) awaitApproval(ctx context.Context, turn, tab int, call schema.ToolCall,
	decision <-chan string) (toolOutcome, bool) {
	timer := time.NewTimer(r.p.cfg.ApprovalTimeout)
	defer timer.Stop()
	var d, reason string
	if decision == nil { // no one can answer
		d, reason = eventbus.DecisionDeny, eventbus.DecidedUnavailable
	} else {
		select {
		case d = <-decision:
			reason = eventbus.DecidedByUser
		case <-timer.C:
			d, reason = eventbus.DecisionDeny, eventbus.DecidedByTimeout
		case <-ctx.Done():
			d, reason = eventbus.DecisionDeny, eventbus.DecidedByStop
		}
	}
	if r.cm.Approvals != nil {
		r.cm.Approvals.Close(call.ID)
	}
	if d != eventbus.DecisionAllow {
		d = eventbus.DecisionDeny
	}
	r.emitPlaced(eventbus.Of(eventbus.TypeToolCallApprovalDecision, eventbus.ToolApproval{
		ToolCallID: call.ID, Name: call.Function.Name, Decision: d, Reason: reason}), turn, tab)
	if d == eventbus.DecisionAllow {
		return toolOutcome{}, false
	}
	out := "denied by user"
	switch reason {
	case eventbus.DecidedByTimeout:
		out = "denied: no one approved the call in time"
	case eventbus.DecidedByStop:
		out = "denied: the answer was stopped"
	case eventbus.DecidedUnavailable:
		out = "denied: approvals cannot be asked for here"
	}
	return toolOutcome{index: tab - 1, call: call, output: out, status: eventbus.ToolDenied}, true
}
