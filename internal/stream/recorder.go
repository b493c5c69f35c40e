package stream

import (
	"context"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
)

// Recorder is the bus subscriber that gives every event of one stream its
// seq, stream id and timestamp, encodes it once, and appends it to the
// store. It is the only place a seq is assigned. Subscribe it first so the
// other subscribers see the seq.
type Recorder struct {
	store   Store
	id      string
	seq     int64
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
	r.seq++
	ev.Seq = r.seq
	ev.StreamID = r.id
	ev.Time = time.Now().UnixMilli()
	data, err := eventbus.AppendJSON(make([]byte, 0, 112+len(r.id)+len(ev.Text)), ev)
	if err != nil {
		// Keep seqs contiguous: a payload that cannot be encoded (a plugin's
		// custom type) is replaced by an error event in its place.
		*ev = eventbus.Event{Type: eventbus.TypeError, Seq: ev.Seq, StreamID: ev.StreamID, Time: ev.Time,
			Payload: eventbus.Error{Code: "internal_error", Message: "An event could not be encoded and was dropped."}}
		data, _ = eventbus.AppendJSON(nil, ev)
	}
	err = r.store.Append(context.Background(), r.id, Record{Seq: ev.Seq, Type: string(ev.Type), Data: data})
	if err != nil && !r.failed {
		r.failed = true
		if r.onError != nil {
			r.onError(err)
		}
	}
}

// LastSeq is the seq of the last recorded event.
func (r *Recorder) LastSeq() int64 { return r.seq }
