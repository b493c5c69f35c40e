package stream

import (
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
}

// NewRecorder returns a recorder for stream id. onError is called once, on
// the first failed append (the stream keeps running for its live readers).
func NewRecorder(store Store, id string, onError func(error)) *Recorder {
	return &Recorder{store: store, id: id, onError: onError}
}

// Handle implements eventbus.Handler.
func (r *Recorder) Handle(ev *eventbus.Event) {
	typ := ev.Type
	data, err := eventbus.AppendJSON(make([]byte, 0, 112+len(r.id)+len(ev.Text)), ev)
	if err != nil {
		typ = eventbus.TypeError
		// Keep seqs contiguous: a payload that cannot be encoded (a plugin's
		// custom type) is stored as an error event in its place.
		data, _ = eventbus.AppendJSON(nil, &eventbus.Event{Type: eventbus.TypeError, Seq: ev.Seq, StreamID: ev.StreamID, Time: ev.Time,
			Payload: eventbus.Error{Code: "internal_error", Message: "An event could not be encoded and was dropped."}})
	}
	err = r.store.Append(context.Background(), r.id, Record{Seq: ev.Seq, Type: string(typ), Data: data})
	if err != nil && !r.failed {
		r.failed = true
		if r.onError != nil {
			r.onError(err)
		}
	}
}
