package stream

import (
	"bytes"
	"context"

	"github.com/chatpipe/chatpipe/eventbus"
)

// Recorder is the bus subscriber that encodes every event of one stream
// once and appends it to the store. The bus has stamped the event's seq,
// stream id and time before any subscriber sees it, so the recorder may
// be subscribed in any place.
type Recorder struct {
	store   Store
	id      string
	onError func(error)
	failed  bool
	// scratch is the encoding buffer, reused: a record's Data is a copy
	// of exactly its length. A live stream retains every record, and an
	// allocation sized by an upper bound of the encoding wasted about a
	// third of each small one.
	scratch []byte
}

// maxScratch bounds the encoding buffer a recorder keeps between events,
// so that one large event does not stay allocated for the stream's life.
const maxScratch = 1 << 10

// NewRecorder returns a recorder for stream id. onError is called once, on
// the first failed append (the stream keeps running for its live readers).
func NewRecorder(store Store, id string, onError func(error)) *Recorder {
	return &Recorder{store: store, id: id, onError: onError}
}

// Handle implements eventbus.Handler.
func (r *Recorder) Handle(ev *eventbus.Event) {
	typ := ev.Type
	buf := r.scratch[:0]
	if est := 112 + len(r.id) + len(ev.Text); est > cap(buf) {
		buf = make([]byte, 0, max(est, 256))
	}
	data, err := eventbus.AppendJSON(buf, ev)
	if err != nil {
		typ = eventbus.TypeError
		// Keep seqs contiguous: a payload that cannot be encoded (a plugin's
		// custom type) is stored as an error event in its place.
		data, _ = eventbus.AppendJSON(data[:0], &eventbus.Event{Type: eventbus.TypeError, Seq: ev.Seq, StreamID: ev.StreamID, Time: ev.Time,
			Payload: eventbus.Error{Code: "internal_error", Message: "An event could not be encoded and was dropped."}})
	}
	switch {
	case cap(data) <= maxScratch:
		r.scratch = data[:0]
		data = bytes.Clone(data)
	case len(data) < cap(data)*3/4: // a large event outgrew the estimate
		data = bytes.Clone(data)
	} // else a large event keeps the buffer the estimate sized
	err = r.store.Append(context.Background(), r.id, Record{Seq: ev.Seq, Type: string(typ), Data: data})
	if err != nil && !r.failed {
		r.failed = true
		if r.onError != nil {
			r.onError(err)
		}
	}
}
