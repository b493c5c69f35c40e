package eventbus

import (
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
// The bus stamps every event with the stream's id, its seq (1, 2, 3 … in
// publish order) and the time before any subscriber sees it, so no
// subscriber depends on another having run first.
type Bus struct {
	mu       sync.Mutex // also held across a publish: seq order is delivery order
	lib      evbus.Bus
	all      []Handler     // handlers that see every type
	topics   map[Type]bool // topics the "all" handlers are attached to
	streamID string
	seq      int64
	now      func() time.Time
}

// NewBus returns an empty bus for stream streamID.
func NewBus(streamID string) *Bus {
	return &Bus{lib: evbus.New(), topics: make(map[Type]bool, len(AllTypes)), streamID: streamID, now: time.Now}
}

// Subscribe attaches h to the given types, or to every type (built-in and
// custom) when none is given. Subscribe before the first Emit.
func (b *Bus) Subscribe(h Handler, types ...Type) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(types) == 0 {
		b.all = append(b.all, h)
		for _, t := range AllTypes {
			b.topics[t] = true
		}
		for t := range b.topics {
			b.attach(t, h)
		}
		return
	}
	for _, t := range types {
		b.attach(t, h)
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
	if !b.topics[ev.Type] {
		b.topics[ev.Type] = true
		for _, h := range b.all {
			b.attach(ev.Type, h)
		}
	}
	b.seq++
	ev.Seq, ev.StreamID, ev.Time = b.seq, b.streamID, b.now().UnixMilli()
	b.lib.Publish(string(ev.Type), &ev)
}

var _ Emitter = (*Bus)(nil)
