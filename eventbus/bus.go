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
// Each topic (event type) has one library handler, the bus's dispatcher,
// which calls that type's subscribers in subscription order: the library
// calls its handlers by reflection, with an allocation and a few hundred
// nanoseconds each, so a token costs one such call however many
// subscribers want it. The dispatcher is attached to a topic when the
// first event of its type is emitted: a stream emits a handful of the
// types, and attaching to every known type up front cost each live stream
// about a hundred of the library's handler records.
//
// The bus stamps every event with the stream's id, its seq (1, 2, 3 … in
// publish order) and the time before any subscriber sees it, so no
// subscriber depends on another having run first.
type Bus struct {
	mu     sync.Mutex // also held across a publish: seq order is delivery order
	lib    evbus.Bus
	subs   []subscription
	topics map[Type][]Handler // the types emitted so far, with their subscribers
	// last and lastHandlers repeat the latest lookup in topics: deltas
	// come in runs of one type, and with hundreds of live streams a
	// stream's map is cold in the cache at each of its tokens.
	last         Type
	lastHandlers []Handler
	streamID     string
	seq          int64
	now          func() time.Time
	// What the dispatcher delivers, set under mu before each publish and
	// reused so that a publish allocates neither: the event (handlers
	// must not keep it), its type's handlers, and the library's argument
	// list pointing at the event.
	cur      Event
	handlers []Handler
	args     []any
	dispatch func(*Event) // b.deliver, bound once: one library record per topic
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
	b := &Bus{lib: evbus.New(), topics: make(map[Type][]Handler, 16), streamID: streamID, now: time.Now}
	b.args = []any{&b.cur}
	b.dispatch = b.deliver
	return b
}

// Subscribe attaches h to the given types, or to every type (built-in and
// custom) when none is given. Subscribe before the first Emit.
func (b *Bus) Subscribe(h Handler, types ...Type) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := subscription{h: h, types: slices.Clone(types)}
	b.subs = append(b.subs, s)
	b.last, b.lastHandlers = "", nil
	for t, hs := range b.topics { // topics already emitted get it at once
		if s.wants(t) {
			b.topics[t] = append(hs, h)
		}
	}
}

// attach records type t's subscribers and registers the dispatcher on its
// topic of the library; the dispatcher has a fixed signature, so the
// library's reflective call can never be misused.
func (b *Bus) attach(t Type) []Handler {
	n := 0
	for _, s := range b.subs {
		if s.wants(t) {
			n++
		}
	}
	hs := make([]Handler, 0, n)
	for _, s := range b.subs {
		if s.wants(t) {
			hs = append(hs, s.h)
		}
	}
	b.topics[t] = hs
	// Subscribe only fails for a non-func, which dispatch never is.
	_ = b.lib.Subscribe(string(t), b.dispatch)
	return hs
}

// deliver is the library's handler of every topic: it calls the handlers
// of the event being published. b.mu is held (by Emit).
func (b *Bus) deliver(ev *Event) {
	for _, h := range b.handlers {
		h(ev)
	}
}

// Emit stamps ev with the stream id, the next seq and the time, then
// publishes it to its type's subscribers, in subscription order. The lock
// is held across the publish (the library serialises publishes anyway):
// two concurrent emitters never deliver their events out of seq order.
func (b *Bus) Emit(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	hs := b.lastHandlers
	if ev.Type != b.last || b.last == "" {
		var ok bool
		if hs, ok = b.topics[ev.Type]; !ok {
			hs = b.attach(ev.Type)
		}
		b.last, b.lastHandlers = ev.Type, hs
	}
	b.seq++
	ev.Seq, ev.StreamID, ev.Time = b.seq, b.streamID, b.now().UnixMilli()
	if len(hs) == 0 {
		return // nobody listens to this type: the seq is spent all the same
	}
	b.cur, b.handlers = ev, hs
	b.lib.Publish(string(ev.Type), b.args...)
	b.cur, b.handlers = Event{}, nil // drop the payload: the bus outlives its events
}

var _ Emitter = (*Bus)(nil)
