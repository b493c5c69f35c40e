package run

import (
	"context"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/stream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A decision reaches a call that waits, once; never one that does not.
func TestApprovalsDeliverOneDecisionToAWaitingCall(t *testing.T) {
	a := newApprovals()
	if a.decide("c1", eventbus.DecisionAllow) {
		t.Fatal("a decision for a call that never waited was taken")
	}
	ch := a.Open("c1")
	if !a.decide("c1", eventbus.DecisionDeny) {
		t.Fatal("the waiting call did not take its decision")
	}
	if d := <-ch; d != eventbus.DecisionDeny {
		t.Fatalf("decision = %q", d)
	}
	if a.decide("c1", eventbus.DecisionAllow) {
		t.Fatal("a second decision was taken")
	}
	a.Open("c2")
	a.Close("c2") // timed out or stopped
	if a.decide("c2", eventbus.DecisionAllow) {
		t.Fatal("a decision after the wait ended was taken")
	}
}

// append records ev on stream id as the recorder would.
func appendEvent(t *testing.T, s stream.Store, id string, seq int64, ev eventbus.Event) {
	t.Helper()
	ev.Seq, ev.StreamID = seq, id
	data, err := eventbus.AppendJSON(nil, &ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(context.Background(), id, stream.Record{Seq: seq, Type: string(ev.Type), Data: data}); err != nil {
		t.Fatal(err)
	}
}

// The log says which approval requests are still open up to a seq, and
// a finished stream has none.
func TestPendingApprovalsAreReadFromTheLog(t *testing.T) {
	s := stream.NewMemory(stream.MemoryOptions{})
	defer s.Close()
	ctx := context.Background()
	if err := s.Create(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	req := func(id string) eventbus.Event {
		return eventbus.Of(eventbus.TypeToolCallApprovalRequest, eventbus.ToolApproval{ToolCallID: id, Name: "t"})
	}
	appendEvent(t, s, "s1", 1, req("a"))
	appendEvent(t, s, "s1", 2, req("b"))
	appendEvent(t, s, "s1", 3, eventbus.Of(eventbus.TypeToolCallApprovalDecision,
		eventbus.ToolApproval{ToolCallID: "a", Decision: eventbus.DecisionAllow, Reason: eventbus.DecidedByUser}))

	ids := func(upTo int64) []int64 {
		recs, err := PendingApprovals(ctx, s, "s1", upTo)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, r := range recs {
			out = append(out, r.Seq)
		}
		return out
	}
	if got := ids(2); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("pending up to 2 = %v", got)
	}
	if got := ids(0); !slices.Equal(got, []int64{2}) {
		t.Fatalf("pending = %v", got)
	}
	if ok, _ := PendingApproval(ctx, s, "s1", "b"); !ok {
		t.Fatal("b is pending")
	}
	if ok, _ := PendingApproval(ctx, s, "s1", "a"); ok {
		t.Fatal("a was decided")
	}
	appendEvent(t, s, "s1", 4, eventbus.Of(eventbus.TypeStreamFinished, eventbus.Finished{Status: eventbus.StatusFailed}))
	if got := ids(0); len(got) != 0 {
		t.Fatalf("a finished stream has pending approvals %v", got)
	}
	if recs, err := PendingApprovals(ctx, s, "nope", 0); err != nil || len(recs) != 0 {
		t.Fatalf("unknown stream: %v, %v", recs, err)
	}
}
