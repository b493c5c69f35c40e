package eventbus

import (
	"slices"
	"sync"

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
type Bus struct {
	mu       sync.Mutex
	lib      evbus.Bus
	subs     []subscription
	attached map[Type]bool // topics whose handlers are attached
}

// subscription is one Subscribe call: its handler and its types (none =
// every type).
type subscription struct {
	h     Handler
	types []Type
}

func (s subscription) wants(t Type) bool { return len(s.types) == 0 || slices.Contains(s.types, t) }

// NewBus returns an empty bus.
func NewBus() *Bus {
	return &Bus{lib: evbus.New(), attached: make(map[Type]bool, 8)}
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

// Emit publishes ev to its type's subscribers, in subscription order.
func (b *Bus) Emit(ev Event) {
	b.mu.Lock()
	if !b.attached[ev.Type] {
		b.attached[ev.Type] = true
		for _, s := range b.subs {
			if s.wants(ev.Type) {
				b.attach(ev.Type, s.h)
			}
		}
	}
	b.mu.Unlock()
	b.lib.Publish(string(ev.Type), &ev)
}

var _ Emitter = (*Bus)(nil)
