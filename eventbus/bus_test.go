package eventbus

import (
	"strings"
	"sync"
	"testing"
)

func TestBusDeliversInSubscriptionOrderAndByType(t *testing.T) {
	b := NewBus()
	var got []string
	b.Subscribe(func(ev *Event) { ev.Seq = 7; got = append(got, "all:"+string(ev.Type)) })
	b.Subscribe(func(ev *Event) { got = append(got, "deltas:"+ev.Text) }, TypeAnswerDelta)
	b.Subscribe(func(ev *Event) {
		if ev.Seq != 7 {
			t.Errorf("later subscriber did not see the seq set by the first")
		}
	})
	b.Emit(Delta(TypeAnswerDelta, "hi"))
	b.Emit(Event{Type: TypeAnswerEnd})
	b.Emit(Event{Type: "plugin.custom", Payload: Custom{Value: map[string]int{"n": 1}}})
	want := []string{"all:answer.delta", "deltas:hi", "all:answer.end", "all:plugin.custom"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestBusConcurrentEmitIsSerialised(t *testing.T) {
	b := NewBus()
	n := 0
	b.Subscribe(func(*Event) { n++ }) // unsynchronised on purpose: the bus serialises
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				b.Emit(Delta(TypeAnswerDelta, "x"))
			}
		})
	}
	wg.Wait()
	if n != 4000 {
		t.Fatalf("delivered %d events, want 4000", n)
	}
}

func BenchmarkBusEmitTwoSubscribers(b *testing.B) {
	bus := NewBus()
	var seq int64
	bus.Subscribe(func(ev *Event) { seq++; ev.Seq = seq })
	bus.Subscribe(func(ev *Event) {}, TypeAnswerDelta)
	b.ReportAllocs()
	for b.Loop() {
		bus.Emit(Delta(TypeAnswerDelta, "token"))
	}
}

// Handlers reach a type in subscription order whichever kind subscribed
// first, and one subscribed after its type was already emitted gets the
// next event of that type.
func TestBusKeepsSubscriptionOrderAcrossTypedAndAll(t *testing.T) {
	b := NewBus()
	var got []string
	b.Subscribe(func(ev *Event) { got = append(got, "deltas") }, TypeAnswerDelta)
	b.Subscribe(func(ev *Event) { got = append(got, "all") })
	b.Emit(Delta(TypeAnswerDelta, "a"))
	b.Subscribe(func(ev *Event) { got = append(got, "late") }, TypeAnswerDelta, TypeAnswerEnd)
	b.Emit(Delta(TypeAnswerDelta, "b"))
	b.Emit(Event{Type: TypeAnswerEnd})
	if want := "deltas all deltas all late all late"; strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

// A stream's bus costs what the stream emits, not what the vocabulary
// holds: a bus with a run's four subscribers that emits three types
// allocates a few dozen times, where attaching every handler to every
// known type took hundreds.
func TestBusAttachesHandlersOnlyToEmittedTypes(t *testing.T) {
	allocs := testing.AllocsPerRun(20, func() {
		b := NewBus()
		b.Subscribe(func(*Event) {})
		b.Subscribe(func(*Event) {}, TypeAnswerDelta, TypeStreamFinished)
		b.Subscribe(func(*Event) {}, TypeStage, TypeError, TypeStreamFinished)
		b.Subscribe(func(*Event) {})
		b.Emit(Event{Type: TypeStreamStarted})
		b.Emit(Delta(TypeAnswerDelta, "x"))
		b.Emit(Event{Type: TypeStreamFinished})
	})
	if allocs > 80 {
		t.Errorf("%.0f allocations for a bus of 4 subscribers and 3 types, want at most 80 (%d types known)", allocs, len(AllTypes))
	}
}
