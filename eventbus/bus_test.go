package eventbus

import (
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestBusDeliversInSubscriptionOrderAndByType(t *testing.T) {
	b := NewBus("s")
	var got []string
	b.Subscribe(func(ev *Event) { got = append(got, "all:"+string(ev.Type)) })
	b.Subscribe(func(ev *Event) { got = append(got, "deltas:"+ev.Text) }, TypeAnswerDelta)
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

func TestBusStampsSeqBeforeEverySubscriber(t *testing.T) {
	b := NewBus("stream-1")
	var first, last []int64
	b.Subscribe(func(ev *Event) {
		if ev.StreamID != "stream-1" || ev.Time == 0 {
			t.Errorf("first subscriber saw stream %q, time %d", ev.StreamID, ev.Time)
		}
		first = append(first, ev.Seq)
	})
	b.Subscribe(func(ev *Event) { last = append(last, ev.Seq) }, TypeAnswerDelta, TypeAnswerEnd)
	b.Emit(Event{Type: TypeAnswerStart, Seq: 99}) // an emitter's seq is overwritten
	b.Emit(Delta(TypeAnswerDelta, "a"))
	b.Emit(Event{Type: TypeAnswerEnd})
	if want := []int64{1, 2, 3}; !slices.Equal(first, want) {
		t.Errorf("first subscriber saw seqs %v, want %v", first, want)
	}
	if want := []int64{2, 3}; !slices.Equal(last, want) {
		t.Errorf("typed subscriber saw seqs %v, want %v", last, want)
	}
}

func TestBusConcurrentEmitDeliversInSeqOrder(t *testing.T) {
	b := NewBus("s")
	var seqs []int64
	b.Subscribe(func(ev *Event) { seqs = append(seqs, ev.Seq) }) // unsynchronised on purpose: the bus serialises
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 250 {
				b.Emit(Delta(TypeAnswerDelta, "x"))
			}
		})
	}
	wg.Wait()
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("event %d delivered with seq %d: seqs must be delivered in order", i, s)
		}
	}
}

func TestBusConcurrentEmitIsSerialised(t *testing.T) {
	b := NewBus("s")
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
	bus := NewBus("s")
	bus.Subscribe(func(ev *Event) {})
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
	b := NewBus("s")
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
		b := NewBus("s")
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

// A token costs one reflective call of the library however many
// subscribers want it (each topic has one dispatcher), and the bus
// reuses the event it publishes: an emit allocates only the library's
// own argument list.
func TestBusEmitAllocatesOnceWhateverTheSubscribers(t *testing.T) {
	b := NewBus("s")
	var n int
	for range 4 {
		b.Subscribe(func(*Event) { n++ })
	}
	b.Subscribe(func(*Event) { n++ }, TypeAnswerDelta)
	b.Emit(Delta(TypeAnswerDelta, "warm")) // attaches the topic
	allocs := testing.AllocsPerRun(100, func() { b.Emit(Delta(TypeAnswerDelta, "token")) })
	if allocs > 1 {
		t.Errorf("%.0f allocations per emit to 5 subscribers, want at most 1", allocs)
	}
	if want := 5 * (1 + 1 + 100); n != want { // the warm emit, AllocsPerRun's own warm-up, the runs
		t.Errorf("handlers ran %d times, want %d", n, want)
	}
}
