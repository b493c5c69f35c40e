package eventbus

import (
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
