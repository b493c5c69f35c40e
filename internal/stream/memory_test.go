package stream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/eventbus"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func rec(seq int64) Record {
	return Record{Seq: seq, Type: "answer.delta", Data: []byte(fmt.Sprintf(`{"seq":%d}`, seq))}
}

func newStore(t *testing.T, o MemoryOptions) *Memory {
	m := NewMemory(o)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func TestMemoryBoundsEvictOldestAndReportExpiredWindow(t *testing.T) {
	ctx := context.Background()
	m := newStore(t, MemoryOptions{MaxEvents: 5})
	_ = m.Create(ctx, "s")
	slow, _ := m.Subscribe(ctx, "s", 0)
	defer slow.Close()
	for i := int64(1); i <= 20; i++ {
		_ = m.Append(ctx, "s", rec(i)) // never blocks on the slow reader
	}
	if _, _, err := slow.Fetch(nil); !errors.Is(err, ErrExpired) {
		t.Fatalf("slow reader: err = %v, want ErrExpired", err)
	}
	if _, err := m.Subscribe(ctx, "s", 3); !errors.Is(err, ErrExpired) {
		t.Fatalf("subscribe before window: err = %v, want ErrExpired", err)
	}
	sub, err := m.Subscribe(ctx, "s", 15)
	if err != nil {
		t.Fatalf("subscribe at window edge: %v", err)
	}
	defer sub.Close()
	recs, _, _ := sub.Fetch(nil)
	if len(recs) != 5 || recs[0].Seq != 16 {
		t.Fatalf("window replay = %d records from %d", len(recs), recs[0].Seq)
	}
}

func TestMemoryByteBound(t *testing.T) {
	ctx := context.Background()
	m := newStore(t, MemoryOptions{MaxBytes: 100})
	_ = m.Create(ctx, "s")
	for i := int64(1); i <= 50; i++ {
		_ = m.Append(ctx, "s", Record{Seq: i, Data: make([]byte, 30)})
	}
	st, _ := m.get("s")
	if st.bytes > 100 {
		t.Fatalf("retained %d bytes, bound is 100", st.bytes)
	}
}

func TestMemoryFinishedStreamExpiresAfterRetention(t *testing.T) {
	ctx := context.Background()
	m := newStore(t, MemoryOptions{Retention: time.Minute})
	_ = m.Create(ctx, "s")
	_ = m.Append(ctx, "s", rec(1))
	_ = m.Finish(ctx, "s")
	m.sweep(time.Now().Add(30 * time.Second))
	if _, err := m.Subscribe(ctx, "s", 0); err != nil {
		t.Fatalf("within retention: %v", err)
	}
	m.sweep(time.Now().Add(2 * time.Minute))
	if _, err := m.Subscribe(ctx, "s", 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after retention: err = %v, want ErrNotFound", err)
	}
}

func TestRecorderStoresContiguousSeqs(t *testing.T) {
	ctx := context.Background()
	m := newStore(t, MemoryOptions{})
	_ = m.Create(ctx, "s")
	r := NewRecorder(m, "s", func(err error) { t.Errorf("append: %v", err) })
	bus := eventbus.NewBus("s")
	bus.Subscribe(func(*eventbus.Event) {}) // the recorder need not be first: the bus stamps seqs
	bus.Subscribe(r.Handle)
	bus.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, "a"))
	bus.Emit(eventbus.Of("bad.payload", eventbus.Custom{Value: func() {}})) // cannot encode
	bus.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, "b"))
	_ = m.Finish(ctx, "s")
	sub, _ := m.Subscribe(ctx, "s", 0)
	defer sub.Close()
	recs, _, _ := sub.Fetch(nil)
	if len(recs) != 3 || recs[1].Type != "error" || recs[2].Seq != 3 {
		t.Fatalf("records = %+v", recs)
	}
}

func BenchmarkMemoryAppendWithLiveReader(b *testing.B) {
	ctx := context.Background()
	m := NewMemory(MemoryOptions{MaxEvents: 1 << 30, MaxBytes: 1 << 40})
	defer m.Close()
	_ = m.Create(ctx, "s")
	sub, _ := m.Subscribe(ctx, "s", 0)
	defer sub.Close()
	data := []byte(`{"seq":1,"type":"answer.delta","content":"hello"}`)
	b.ReportAllocs()
	var seq int64
	var buf []Record
	for b.Loop() {
		seq++
		_ = m.Append(ctx, "s", Record{Seq: seq, Type: "answer.delta", Data: data})
		buf, _, _ = sub.Fetch(buf[:0])
		<-sub.Ready()
	}
}
