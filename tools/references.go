package tools

import (
	"sync"

	"github.com/chatpipe/chatpipe/eventbus"
)

// References numbers the passages an agent's tools find, in the order they
// are found, so that a citation [n] keeps its meaning across tool calls
// and cycles: the first search's passages are 1..k, the next one's go on
// from k+1, and a passage found again keeps its first number. It is safe
// for concurrent use.
type References struct {
	mu    sync.Mutex
	items []eventbus.Reference
}

// NewReferences starts numbering after initial (references the request
// already has, numbered 1..n).
func NewReferences(initial []eventbus.Reference) *References {
	return &References{items: append([]eventbus.Reference(nil), initial...)}
}

// Add numbers refs (their own Index is ignored) and returns them as
// numbered: new passages after those already collected, passages already
// collected with their first number.
func (r *References) Add(refs []eventbus.Reference) []eventbus.Reference {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]eventbus.Reference, 0, len(refs))
next:
	for _, ref := range refs {
		for _, have := range r.items {
			if have.ChunkID == ref.ChunkID && have.DocumentID == ref.DocumentID && have.Content == ref.Content {
				out = append(out, have)
				continue next
			}
		}
		ref.Index = len(r.items) + 1
		r.items = append(r.items, ref)
		out = append(out, ref)
	}
	return out
}

// Items returns every collected reference, numbered 1..n.
func (r *References) Items() []eventbus.Reference {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]eventbus.Reference(nil), r.items...)
}

// Len is the number of collected references.
func (r *References) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.items)
}
