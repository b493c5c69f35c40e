package cluster

import (
	"testing"
	"time"
)

// decisionsTo returns a lease handler that records decisions on a channel.
func decisionsTo(ch chan<- string) func(toolCallID, decision string) {
	return func(toolCallID, decision string) { ch <- toolCallID + "=" + decision }
}

func waitDecision(t *testing.T, ch <-chan string, want string, d time.Duration) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("decision %q, want %q", got, want)
		}
	case <-time.After(d):
		t.Fatalf("timed out waiting for decision %q", want)
	}
}

// A decision posted on another replica reaches the waiting tool call of
// the generating one; a call that does not wait gets nothing.
func TestDecisionOnAnotherReplicaReachesTheWaitingCall(t *testing.T) {
	c := redisClient(t)
	p := prefix(t, c)
	a := newCoordinator(t, c, p, 3*time.Second, nil)
	b := newCoordinator(t, c, p, 3*time.Second, nil)
	lease, err := a.Acquire(t.Context(), "s1", func(bool) {})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	got := make(chan string, 4)
	lease.OnDecision(decisionsTo(got))
	lease.AwaitDecision("call_1")
	found, err := b.SendDecision(t.Context(), "s1", "call_1", "allow")
	if err != nil || !found {
		t.Fatalf("SendDecision = %v, %v", found, err)
	}
	waitDecision(t, got, "call_1=allow", 3*time.Second) // by pub/sub, or the key at the next renewal
	// Delivered once: the renewal does not deliver it again, and a call
	// nobody waits for gets nothing.
	if found, err := b.SendDecision(t.Context(), "s1", "call_2", "deny"); err != nil || !found {
		t.Fatalf("SendDecision = %v, %v", found, err)
	}
	select {
	case d := <-got:
		t.Fatalf("unexpected decision %q", d)
	case <-time.After(1200 * time.Millisecond): // past a renewal
	}
	if found, err := b.SendDecision(t.Context(), "nope", "call_1", "allow"); found || err != nil {
		t.Fatalf("SendDecision to no generation = %v, %v", found, err)
	}
}

// A decision whose message was missed is found at the next renewal.
func TestADecisionPubSubMissedIsFoundAtTheNextRenewal(t *testing.T) {
	c := redisClient(t)
	p := prefix(t, c)
	a := newCoordinator(t, c, p, 900*time.Millisecond, nil)
	lease, err := a.Acquire(t.Context(), "s1", func(bool) {})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	got := make(chan string, 1)
	lease.OnDecision(decisionsTo(got))
	lease.AwaitDecision("call_1")
	c.Set(t.Context(), p+"decision:s1:call_1", "deny", time.Minute) // as if the message was lost
	waitDecision(t, got, "call_1=deny", 2*time.Second)
}

// On the generating replica itself a decision is delivered directly.
func TestDecisionOnTheSameReplicaIsDirect(t *testing.T) {
	c := redisClient(t)
	p := prefix(t, c)
	a := newCoordinator(t, c, p, 3*time.Second, nil)
	lease, _ := a.Acquire(t.Context(), "s1", func(bool) {})
	defer lease.Release()
	got := make(chan string, 1)
	lease.OnDecision(decisionsTo(got))
	if found, _ := a.SendDecision(t.Context(), "s1", "call_1", "allow"); found {
		t.Fatal("a decision for a call not awaited was delivered")
	}
	lease.AwaitDecision("call_1")
	if found, _ := a.SendDecision(t.Context(), "s1", "call_1", "allow"); !found {
		t.Fatal("not delivered")
	}
	waitDecision(t, got, "call_1=allow", time.Second)
}
