package run

import (
	"context"
	"errors"
	"sync"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/approval"
	"github.com/chatpipe/chatpipe/internal/cluster"
)

// ErrNoPendingApproval: the stream has no tool call of that id waiting for
// a decision (unknown, already decided, or its answer ended).
var ErrNoPendingApproval = errors.New("no pending approval")

// approvals is a run's register of tool calls waiting for the user's
// decision (approval.Broker). Decisions come from Manager.Decide on this
// replica, or through the run's cluster lease when the request landed on
// another one.
type approvals struct {
	mu      sync.Mutex
	waiting map[string]chan string
	lease   *cluster.Lease // nil without a cluster
}

func newApprovals() *approvals { return &approvals{waiting: map[string]chan string{}} }

// Open implements approval.Broker.
func (a *approvals) Open(toolCallID string) <-chan string {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch := make(chan string, 1)
	a.waiting[toolCallID] = ch
	if a.lease != nil {
		a.lease.AwaitDecision(toolCallID)
	}
	return ch
}

// Close implements approval.Broker.
func (a *approvals) Close(toolCallID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.waiting, toolCallID)
	if a.lease != nil {
		a.lease.ForgetDecision(toolCallID)
	}
}

// decide delivers a decision to a waiting call; false when none waits.
func (a *approvals) decide(toolCallID, decision string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch, ok := a.waiting[toolCallID]
	if !ok {
		return false
	}
	delete(a.waiting, toolCallID) // one decision per request
	ch <- decision
	return true
}

// attach connects the register to the run's cluster lease, so decisions
// posted to other replicas arrive, and calls already waiting are watched.
func (a *approvals) attach(l *cluster.Lease) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lease = l
	l.OnDecision(func(toolCallID, decision string) { a.decide(toolCallID, decision) })
	for id := range a.waiting {
		l.AwaitDecision(id)
	}
}

var _ approval.Broker = (*approvals)(nil)

// validDecision reports whether d is a decision a user may post.
func validDecision(d string) bool { return d == eventbus.DecisionAllow || d == eventbus.DecisionDeny }

// Decide delivers the user's decision on tool call toolCallID of stream
// streamID, on whichever replica generates it. It fails with
// ErrNoPendingApproval when no such call waits.
func (m *Manager) Decide(ctx context.Context, streamID, toolCallID, decision string) error {
	if !validDecision(decision) {
		return errors.New("run: decision must be allow or deny")
	}
	if r, ok := m.Lookup(streamID); ok {
		if r.approvals.decide(toolCallID, decision) {
			return nil
		}
		return ErrNoPendingApproval
	}
	if m.opts.Cluster == nil {
		return ErrNoPendingApproval
	}
	// Another replica generates it, or none: the shared log says whether
	// the call still waits.
	pending, err := PendingApproval(ctx, m.opts.Streams, streamID, toolCallID)
	if err != nil {
		return err
	}
	if !pending {
		return ErrNoPendingApproval
	}
	found, err := m.opts.Cluster.SendDecision(ctx, streamID, toolCallID, decision)
	if err != nil {
		return err
	}
	if !found {
		return ErrNoPendingApproval
	}
	return nil
}
