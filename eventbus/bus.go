package eventbus

import (
	"slices"
	"sync"
	"time"

	evbus "github.com/asaskevich/EventBus"
)

// Emitter publishes events. It is the only way plugins produce output, and
// the seam a plugin wraps to rewrite or hold back what later plugins emit.
// Emit is safe for concurrent use.
type Emitter interface {
	Emit(Event)
}

// EmitterFunc adapts a function to Emitter.
type EmitterFunc func(Event)

// Emit calls f(ev).
func (f EmitterFunc) Emit(ev Event) { f(ev) }

// Handler receives events synchronously while the bus is locked. It must be
// quick and must not emit, subscribe or block: slow work belongs behind the
// handler's own queue. It must not keep ev after it returns.
type Handler func(ev *Event)

// Bus is one stream's event bus: a typed facade over asaskevich/EventBus.
// Create one per stream and drop it when the stream ends; the library holds
// one mutex across every publish, so a shared bus would serialise all
// streams, and its Unsubscribe cannot tell closures apart, so subscribers
// are attached for the bus's whole life instead of removed.
//
// A handler is attached to a topic of the library only when the first
// event of that type is emitted, in subscription order: a stream emits a
// handful of the types, and attaching every handler to every known type up
// front cost each live stream about a hundred of the library's handler
// records.
//
// The bus stamps every event with the stream's id, its seq (1, 2, 3 … in
// publish order) and the time before any subscriber sees it, so no
// subscriber depends on another having run first.
type Bus struct {
	mu       sync.Mutex // also held across a publish: seq order is delivery order
	lib      evbus.Bus
	subs     []subscription
	attached map[Type]bool // topics whose handlers are attached
	streamID string
	seq      int64
	now      func() time.Time
}

// subscription is one Subscribe call: its handler and its types (none =
// every type).
type subscription struct {
	h     Handler
	types []Type
}

func (s subscription) wants(t Type) bool { return len(s.types) == 0 || slices.Contains(s.types, t) }

// NewBus returns an empty bus for stream streamID.
func NewBus(streamID string) *Bus {
	return &Bus{lib: evbus.New(), attached: make(map[Type]bool, 8), streamID: streamID, now: time.Now}
}

// Subscribe attaches h to the given types, or to every type (built-in and
// custom) when none is given. Subscribe before the first Emit.
func (b *Bus) Subscribe(h Handler, types ...Type) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := subscription{h: h, types: slices.Clone(types)}
	b.subs = append(b.subs, s)
	for t := range b.attached { // topics already emitted get it at once
		if s.wants(t) {
			b.attach(t, h)
		}
	}
}

// attach registers h on topic t; the handler is a named type with a fixed
// signature, so the library's reflective call can never be misused.
func (b *Bus) attach(t Type, h Handler) {
	// Subscribe only fails for a non-func, which h never is.
	_ = b.lib.Subscribe(string(t), (func(*Event))(h))
}

// Emit stamps ev with the stream id, the next seq and the time, then
// publishes it to its type's subscribers, in subscription order. The lock
// is held across the publish (the library serialises publishes anyway):
// two concurrent emitters never deliver their events out of seq order.
func (b *Bus) Emit(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.attached[ev.Type] {
		b.attached[ev.Type] = true
		for _, s := range b.subs {
			if s.wants(ev.Type) {
				b.attach(ev.Type, s.h)
			}
		}
	}
	b.seq++
	ev.Seq, ev.StreamID, ev.Time = b.seq, b.streamID, b.now().UnixMilli()
	b.lib.Publish(string(ev.Type), &ev)
}

var _ Emitter = (*Bus)(nil)
