package stream

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
)

// tee keeps a copy of every record appended, as the store was given it.
type tee struct {
	Store
	got []Record
}

func (t *tee) Append(ctx context.Context, id string, rec Record) error {
	t.got = append(t.got, Record{Seq: rec.Seq, Type: rec.Type, Data: bytes.Clone(rec.Data)})
	return t.Store.Append(ctx, id, rec)
}

// Every record comes back from the packed log exactly as it was
// appended: events of every shape the bus writes (text, payloads,
// placement, origin, escapes, a payload that cannot be encoded), records
// of other shapes, large ones, and after the front of the log was dropped
// and compacted.
func TestMemoryPackedRecordsComeBackAsAppended(t *testing.T) {
	ctx := context.Background()
	m := newStore(t, MemoryOptions{MaxEvents: 150})
	_ = m.Create(ctx, "s-1")
	tap := &tee{Store: m}
	r := NewRecorder(tap, "s-1", func(err error) { t.Errorf("append: %v", err) })
	bus := eventbus.NewBus("s-1")
	bus.Subscribe(r.Handle)
	origin := []eventbus.Hop{{Agent: "sub", ID: "a\"1", Index: 2}}
	for i := range 60 {
		bus.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, fmt.Sprintf("word %d \"quoted\" \\ \n 中文 ", i)))
		ev := eventbus.Delta(eventbus.TypeThinkingDelta, "")
		ev.Origin = origin
		bus.Emit(ev)
		ev = eventbus.Of(eventbus.TypeError, eventbus.Error{Code: "x", Message: strings.Repeat("long ", i*10)})
		ev.Placement = &eventbus.Placement{Model: "m", Turn: i}
		bus.Emit(ev)
	}
	bus.Emit(eventbus.Of("plugin.custom", eventbus.Custom{Value: map[string]any{"k": []int{1, 2}}}))
	bus.Emit(eventbus.Of("bad.payload", eventbus.Custom{Value: func() {}}))
	// Records not written by the bus: another shape, a wrong seq inside,
	// another stream's id, a type to escape, large data.
	last := tap.got[len(tap.got)-1].Seq
	others := []Record{
		{Type: "answer.delta", Data: []byte(`{"seq":1}`)},
		{Type: "answer.delta", Data: []byte(fmt.Sprintf(`{"seq":%d,"type":"answer.delta","stream_id":"other","ts":1,"content":"x"}`, last+2))},
		{Type: "answer.delta", Data: []byte(fmt.Sprintf(`{"seq":%d,"type":"answer.delta","stream_id":"s-1","ts":007,"content":"x"}`, last+3))},
		{Type: "odd\"type", Data: []byte(fmt.Sprintf(`{"seq":%d,"type":"odd\"type","stream_id":"s-1","ts":1}`, last+4))},
		{Type: "answer.delta", Data: []byte(fmt.Sprintf(`{"seq":%d,"type":"answer.delta","stream_id":"s-1","ts":-5}`, last+5))},
		{Type: "answer.delta", Data: bytes.Repeat([]byte("z"), 5000)},
		{Type: "answer.delta", Data: []byte{}},
	}
	for i, rec := range others {
		rec.Seq = last + 1 + int64(i)
		if err := tap.Append(ctx, "s-1", rec); err != nil {
			t.Fatal(err)
		}
	}
	_ = m.Finish(ctx, "s-1")

	want := tap.got[len(tap.got)-150:] // MaxEvents dropped the oldest
	sub, err := m.Subscribe(ctx, "s-1", want[0].Seq-1)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var got []Record
	for i := 0; ; i++ { // read in small steps too: unpack from the middle of the log
		var done bool
		got, done, err = sub.Fetch(got)
		if err != nil || done {
			break
		}
		if i > 1000 {
			t.Fatal("never done")
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Seq != want[i].Seq || got[i].Type != want[i].Type || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Fatalf("record %d:\n got {%d %q %s}\nwant {%d %q %s}", i, got[i].Seq, got[i].Type, got[i].Data, want[i].Seq, want[i].Type, want[i].Data)
		}
	}
	mid, err := m.Subscribe(ctx, "s-1", want[70].Seq-1) // from the middle of the log
	if err != nil {
		t.Fatal(err)
	}
	defer mid.Close()
	if recs, _, err := mid.Fetch(nil); err != nil || len(recs) != len(want)-70 || !bytes.Equal(recs[0].Data, want[70].Data) {
		t.Fatalf("from the middle: %d records (%v), want %d", len(recs), err, len(want)-70)
	}
	st, _ := m.get("s-1")
	if st.head != 0 && st.offs[st.head] == 0 {
		t.Errorf("the dropped front of the log was never given back (head %d of %d)", st.head, len(st.offs))
	}
}

// A streamed token costs a few dozen bytes of the store, not a record of
// its own (~200 bytes before the log was packed).
func TestMemoryPackedDeltaCost(t *testing.T) {
	ctx := context.Background()
	m := newStore(t, MemoryOptions{})
	id := "0b9f3f8e-8a2e-4c39-9d59-1a4f0e6a7c11"
	_ = m.Create(ctx, id)
	bus := eventbus.NewBus(id)
	bus.Subscribe(NewRecorder(m, id, func(err error) { t.Errorf("append: %v", err) }).Handle)
	const n = 1000
	for range n {
		bus.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, "word "))
	}
	st, _ := m.get(id)
	perEvent := float64(m.Bytes()) / n
	heldPerEvent := float64(cap(st.log)+4*cap(st.offs)) / n
	t.Logf("store cost %.1f B, log and offsets %.1f B per delta", perEvent, heldPerEvent)
	if perEvent > 40 || heldPerEvent > 60 {
		t.Errorf("a delta costs %.1f bytes of the store (%.1f held), want at most 40 (60)", perEvent, heldPerEvent)
	}
}
