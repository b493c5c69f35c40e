package eventbus

import (
	"slices"
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
