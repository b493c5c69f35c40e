// Package registry is the one way chatpipe chooses an implementation by
// name: plugins, tools, model providers, embedders, stores and caches are
// each a Registry from the value an operator writes in config.yaml
// (`storage.driver: sqlite`, `provider: openai`, a plugin's name) to the
// function that builds it. Grep a config value and you land on the
// Register call that makes it work.
//
// A Registry is filled once, from init functions, and read for the life of
// the process; it is safe for concurrent use all the same, since tests
// register their own entries.
package registry

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/chatpipe/chatpipe/internal/suggest"
)

// Registry maps names to factories of one kind (F is the kind's
// constructor type).
type Registry[F any] struct {
	kind string // what the names name, for messages: "plugin", "storage driver"
	mu   sync.RWMutex
	m    map[string]F
}

// New returns an empty registry of kind, the noun its errors use
// ("unknown plugin …").
func New[F any](kind string) *Registry[F] {
	return &Registry[F]{kind: kind, m: map[string]F{}}
}

// Kind is the noun the registry's messages use for its names.
func (r *Registry[F]) Kind() string { return r.kind }

// Register makes f available under name; call it from an init function.
// An empty or repeated name panics: it is a programming error, found when
// the binary starts.
func (r *Registry[F]) Register(name string, f F) {
	if name == "" {
		panic(fmt.Sprintf("registry: %s registered with an empty name", r.kind))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic(fmt.Sprintf("registry: %s registered twice: %s", r.kind, name))
	}
	r.m[name] = f
}

// Lookup returns the factory registered under name.
func (r *Registry[F]) Lookup(name string) (F, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.m[name]
	return f, ok
}

// Get returns the factory registered under name, or an *UnknownError that
// lists the registered names and the likely one meant.
func (r *Registry[F]) Get(name string) (F, error) {
	if f, ok := r.Lookup(name); ok {
		return f, nil
	}
	var zero F
	return zero, r.Unknown(name)
}

// Names lists the registered names, sorted.
func (r *Registry[F]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Unknown is the error for name, which nothing registered.
func (r *Registry[F]) Unknown(name string) *UnknownError {
	known := r.Names()
	return &UnknownError{Kind: r.kind, Name: name, Known: known, DidYouMean: suggest.Closest(name, known)}
}

// UnknownError reports a name that no implementation registered. Callers
// put the config key in front of it (`pipelines.rag[4]: unknown plugin …`).
type UnknownError struct {
	Kind       string   // the registry's kind: "plugin", "tool", …
	Name       string   // the name asked for
	Known      []string // the registered names, sorted
	DidYouMean string   // the registered name nearest Name, or ""
}

// Error reads `unknown plugin "merg" (known: merge, rerank; did you mean "merge"?)`.
func (e *UnknownError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown %s %q (known: ", e.Kind, e.Name)
	if len(e.Known) == 0 {
		b.WriteString("none")
	} else {
		b.WriteString(strings.Join(e.Known, ", "))
	}
	if e.DidYouMean != "" {
		fmt.Fprintf(&b, "; did you mean %q?", e.DidYouMean)
	}
	b.WriteString(")")
	return b.String()
}
