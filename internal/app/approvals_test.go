package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/internal/stream/redisstore/redistest"
)

// askApproval starts an agent answer whose first model call asks for
// e2e_wait (which needs approval, and whose gate is open) and reads the
// stream up to the approval request.
func askApproval(t *testing.T, h *harness, key string) (*sse, []event) {
	t.Helper()
	openE2EGate(key)
	h.provider.Enqueue(
		providertest.Script{Chunks: providertest.ToolCall(0, "call_ap", "e2e_wait", `{"key":"`+key+`"}`, 2)},
		providertest.Script{Chunks: providertest.Answer("Done.", 1)},
	)
	s := h.ask(h.createSession(), "Run it.")
	evs := s.until(isType(eventbus.TypeToolCallApprovalRequest))
	req := evs[len(evs)-1]
	// The call was complete before the model call ended, so it asked
	// then; the model call's end follows.
	evs = append(evs, s.until(isType(eventbus.TypeModelCallFinished))...)
	a := req.Payload.(eventbus.ToolApproval)
	if a.ToolCallID != "call_ap" || a.Name != "e2e_wait" || a.Arguments != `{"key":"`+key+`"}` || a.ExpiresAt == 0 ||
		req.Placement == nil || req.Placement.Turn != 1 || req.Placement.Tab != 1 {
		t.Fatalf("approval request = %+v at %+v", a, req.Placement)
	}
	return s, evs
}

// approvalMode is the agent mode offering e2e_wait, marked require_approval.
func approvalMode(timeout string) func(*config.Config) {
	return agentMode(map[string]any{"approval_timeout": timeout,
		"tools": []any{map[string]any{"e2e_wait": map[string]any{"require_approval": true}}}})
}

func newApprovalHarness(t *testing.T, timeout string) *harness {
	return newHarness(t, approvalMode(timeout))
}

// decide posts a decision and returns the status code.
func (h *harness) decide(stream, call, decision string) int {
	h.t.Helper()
	return h.call("POST", "/api/v1/streams/"+stream+"/approvals/"+call, `{"decision":"`+decision+`"}`, nil)
}

func decisionOf(t *testing.T, evs []event) eventbus.ToolApproval {
	t.Helper()
	for _, e := range evs {
		if e.Type == eventbus.TypeToolCallApprovalDecision {
			return e.Payload.(eventbus.ToolApproval)
		}
	}
	t.Fatalf("no approval decision in %v", summary(evs, false))
	return eventbus.ToolApproval{}
}

// Allowed, the call runs and the model gets its output; denied, the model
// reads "denied by user". Either way the decision is on the stream, once.
func TestApprovalAllowAndDenyOverHTTP(t *testing.T) {
	for _, tc := range []struct {
		decision, status, sentBack string
	}{
		{eventbus.DecisionAllow, eventbus.ToolCompleted, "done "},
		{eventbus.DecisionDeny, eventbus.ToolDenied, "denied by user"},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			h := newApprovalHarness(t, "1m")
			key := e2eKey("approve")
			s, before := askApproval(t, h, key)
			id := s.messageID()
			if code := h.call("POST", "/api/v1/streams/"+id+"/approvals/call_ap", `{"decision":"maybe"}`, nil); code != http.StatusBadRequest {
				t.Fatalf("invalid decision: %d", code)
			}
			if code := h.decide(id, "call_ap", tc.decision); code != http.StatusAccepted {
				t.Fatalf("decide: %d", code)
			}
			if code := h.decide(id, "call_ap", tc.decision); code != http.StatusNotFound {
				t.Fatalf("deciding twice: %d, want 404", code)
			}
			if code := h.decide(id, "call_other", tc.decision); code != http.StatusNotFound {
				t.Fatalf("deciding an unknown call: %d, want 404", code)
			}
			evs := append(before, s.all()...)
			checkSeqs(t, evs, 1)
			if d := decisionOf(t, evs); d.Decision != tc.decision || d.Reason != eventbus.DecidedByUser {
				t.Fatalf("decision = %+v", d)
			}
			want := []string{"tool_call.start@1.1", "tool_call.end@1.1", "tool_call.approval_request@1.1",
				"tool_call.approval_decision@1.1", "tool_result@1.1", "answer.start@2.0"}
			if got := summary(evs, false); !containsInOrder(got, want) {
				t.Fatalf("events %v, want in order %v", got, want)
			}
			r := resultsOf(evs)
			if len(r) != 1 || r[0].Status != tc.status || !strings.HasPrefix(r[0].Output, tc.sentBack) {
				t.Fatalf("results = %+v", r)
			}
			if got := toolMessages(h.provider.Requests()[1].Body); len(got) != 1 || !strings.HasPrefix(got[0], "call_ap="+tc.sentBack) {
				t.Fatalf("sent back = %v", got)
			}
			if finished(t, evs).Status != eventbus.StatusCompleted {
				t.Fatal("not completed")
			}
			if code := h.decide(id, "call_ap", tc.decision); code != http.StatusNotFound {
				t.Fatalf("deciding after the end: %d, want 404", code)
			}
		})
	}
}

// An approval left unanswered past approval_timeout is denied.
func TestApprovalTimeoutDenies(t *testing.T) {
	h := newApprovalHarness(t, "100ms")
	s, before := askApproval(t, h, e2eKey("timeout"))
	evs := append(before, s.all()...)
	if d := decisionOf(t, evs); d.Decision != eventbus.DecisionDeny || d.Reason != eventbus.DecidedByTimeout {
		t.Fatalf("decision = %+v", d)
	}
	if r := resultsOf(evs); len(r) != 1 || r[0].Status != eventbus.ToolDenied {
		t.Fatalf("results = %+v", r)
	}
	if finished(t, evs).Status != eventbus.StatusCompleted || text(evs, eventbus.TypeAnswerDelta) != "Done." {
		t.Fatal("the model did not answer after the denial")
	}
}

// Stopping while an approval is pending denies it and ends the answer
// stopped; the tool never runs and the model is not asked again.
func TestStopWhileApprovalPendingDeniesIt(t *testing.T) {
	h := newApprovalHarness(t, "1m")
	s, before := askApproval(t, h, e2eKey("stop"))
	if code := h.call("POST", "/api/v1/streams/"+s.messageID()+"/stop", "", nil); code != http.StatusAccepted {
		t.Fatalf("stop: %d", code)
	}
	evs := append(before, s.all()...)
	checkSeqs(t, evs, 1)
	if d := decisionOf(t, evs); d.Decision != eventbus.DecisionDeny || d.Reason != eventbus.DecidedByStop {
		t.Fatalf("decision = %+v", d)
	}
	if r := resultsOf(evs); len(r) != 1 || r[0].Status != eventbus.ToolDenied {
		t.Fatalf("results = %+v", r)
	}
	if fin := finished(t, evs); fin.Status != eventbus.StatusStopped {
		t.Fatalf("finished = %+v", fin)
	}
	if n := len(h.provider.Requests()); n != 1 {
		t.Fatalf("%d provider requests after a stop", n)
	}
}

// A reader that resumes after the approval request while it is pending
// gets it again (without an id, so its Last-Event-ID stays), and the rest
// of the stream with no gap and no duplicate.
func TestResumeWhileApprovalPendingResendsIt(t *testing.T) {
	h := newApprovalHarness(t, "1m")
	s, before := askApproval(t, h, e2eKey("resume"))
	s.close()
	last := before[len(before)-1]
	id := s.messageID()

	r := h.open("GET", "/api/v1/streams/"+id, "", "Last-Event-ID", last.ID)
	again, ok := r.next()
	asked := before[indexOf(before, eventbus.TypeToolCallApprovalRequest)]
	if !ok || again.Type != eventbus.TypeToolCallApprovalRequest || again.ID != "" || again.Seq != asked.Seq ||
		again.Payload.(eventbus.ToolApproval).ToolCallID != "call_ap" {
		t.Fatalf("first frame on resume = %+v (ok %v)", again, ok)
	}
	if code := h.decide(id, "call_ap", eventbus.DecisionAllow); code != http.StatusAccepted {
		t.Fatalf("decide: %d", code)
	}
	after := r.all()
	all := append(before, after...)
	checkSeqs(t, all, 1)
	if finished(t, all).Status != eventbus.StatusCompleted {
		t.Fatal("not completed")
	}
	// Once decided, a resume from the same point gets no re-sent request.
	rest := h.open("GET", "/api/v1/streams/"+id, "", "Last-Event-ID", last.ID).all()
	if len(rest) == 0 || rest[0].ID == "" {
		t.Fatalf("a decided approval was re-sent: %v", summary(rest, false))
	}
}

// Only the stream's owner may decide: another tenant gets 404.
func TestApprovalIsTheStreamOwners(t *testing.T) {
	h := newHarness(t, withTwoTenants, approvalMode("1m"))
	acme := h.as(acmeKey)
	key := e2eKey("tenant")
	openE2EGate(key)
	h.provider.Enqueue(
		providertest.Script{Chunks: providertest.ToolCall(0, "call_t", "e2e_wait", `{"key":"`+key+`"}`, 1)},
		providertest.Script{Chunks: providertest.Answer("Done.", 1)},
	)
	s := acme.ask(acme.createSession(), "Q")
	s.until(isType(eventbus.TypeToolCallApprovalRequest))
	if code := h.as(betaKey).decide(s.messageID(), "call_t", "allow"); code != http.StatusNotFound {
		t.Fatalf("another tenant's decision: %d, want 404", code)
	}
	if code := acme.decide(s.messageID(), "call_t", "allow"); code != http.StatusAccepted {
		t.Fatalf("owner's decision: %d", code)
	}
	if fin := finished(t, s.all()); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("finished = %+v", fin)
	}
}

// A decision posted to the other replica reaches the generating one (by
// the cluster's pub/sub, or its key at the next lease renewal), and a
// reader resuming there is shown the pending request again.
func TestApprovalDecidedOnAnotherReplica(t *testing.T) {
	dsn := postgresSchema(t)
	addr := redistest.Addr(t)
	prefix := redistest.Prefix(t)
	provider := providertest.New(t)
	replica := func() *harness {
		cfg := clusterConfig(t, provider, dsn, addr, prefix)
		approvalMode("1m")(cfg)
		return startHarness(t, provider, cfg, "")
	}
	a, b := replica(), replica()
	s, before := askApproval(t, a, e2eKey("replica"))
	id := s.messageID()
	last := before[len(before)-1]

	onB := b.open("GET", "/api/v1/streams/"+id, "", "Last-Event-ID", last.ID)
	if again, ok := onB.next(); !ok || again.Type != eventbus.TypeToolCallApprovalRequest || again.ID != "" {
		t.Fatalf("first frame of a resume on B = %+v", again)
	}
	if code := b.decide(id, "call_ap", eventbus.DecisionAllow); code != http.StatusAccepted {
		t.Fatalf("decide on B: %d", code)
	}
	evs := append(before, s.all()...)
	if d := decisionOf(t, evs); d.Decision != eventbus.DecisionAllow || d.Reason != eventbus.DecidedByUser {
		t.Fatalf("decision = %+v", d)
	}
	if r := resultsOf(evs); len(r) != 1 || r[0].Status != eventbus.ToolCompleted {
		t.Fatalf("results = %+v", r)
	}
	if fin := finished(t, onB.all()); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("reader on B: %+v", fin)
	}
	a.waitDone(id)
	if code := b.decide(id, "call_ap", eventbus.DecisionAllow); code != http.StatusNotFound {
		t.Fatalf("deciding on B after the end: %d, want 404", code)
	}
}

// containsInOrder reports whether want appears in got in order (not
// necessarily adjacent).
func containsInOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// A reader resuming while an approval it saw is still pending gets, in
// this order: the gap it missed (with its ids), the still-pending request
// again (without an id), then the live tail.
func TestResumeSendsTheGapBeforePendingApprovals(t *testing.T) {
	h := newApprovalHarness(t, "1m")
	ka, kb := e2eKey("gap-a"), e2eKey("gap-b")
	openE2EGate(ka)
	openE2EGate(kb)
	h.provider.Enqueue(
		providertest.Script{Chunks: append(providertest.ToolCall(0, "call_a", "e2e_wait", `{"key":"`+ka+`"}`, 1),
			providertest.ToolCall(1, "call_b", "e2e_wait", `{"key":"`+kb+`"}`, 1)...)},
		providertest.Script{Chunks: providertest.Answer("Done.", 1)},
	)
	s := h.ask(h.createSession(), "Run both.")
	evs := s.until(isType(eventbus.TypeToolCallApprovalRequest))
	first := evs[len(evs)-1]
	s.until(isType(eventbus.TypeToolCallApprovalRequest)) // call_b's is in the log too
	s.close()
	id := s.messageID()

	r := h.open("GET", "/api/v1/streams/"+id, "", "Last-Event-ID", first.ID)
	var got []event
	for len(got) == 0 || got[len(got)-1].ID != "" { // up to the re-sent request, which has no id
		e, ok := r.next()
		if !ok {
			t.Fatalf("stream ended before the pending request was re-sent: %v", summary(got, false))
		}
		got = append(got, e)
	}
	again := got[len(got)-1]
	if a := again.Payload.(eventbus.ToolApproval); a.ToolCallID != "call_a" || again.Seq != first.Seq {
		t.Fatalf("re-sent = %+v", again)
	}
	gap := got[:len(got)-1]
	if len(gap) == 0 || gap[0].Seq != first.Seq+1 {
		t.Fatalf("the gap did not come first: %v", summary(got, false))
	}
	checkSeqs(t, gap, first.Seq+1)
	sawB := false
	for _, e := range gap {
		if a, ok := e.Payload.(eventbus.ToolApproval); ok && e.Type == eventbus.TypeToolCallApprovalRequest {
			sawB = sawB || a.ToolCallID == "call_b"
		}
	}
	if !sawB {
		t.Fatalf("call_b's request is not in the replayed gap: %v", summary(gap, false))
	}
	for _, call := range []string{"call_a", "call_b"} {
		if code := h.decide(id, call, eventbus.DecisionAllow); code != http.StatusAccepted {
			t.Fatalf("decide %s: %d", call, code)
		}
	}
	tail := r.all()
	checkSeqs(t, tail, gap[len(gap)-1].Seq+1)
	if finished(t, tail).Status != eventbus.StatusCompleted {
		t.Fatal("not completed")
	}
}
