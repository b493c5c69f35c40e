package config

import "sync/atomic"

// Holder publishes the current configuration snapshot to concurrent
// readers. The watcher's onChange stores a new snapshot; each stream loads
// the pointer once when it starts and keeps that snapshot to its end. The
// zero Holder is ready to use and holds nil.
type Holder struct {
	p atomic.Pointer[Config]
}

// NewHolder returns a Holder holding cfg.
func NewHolder(cfg *Config) *Holder {
	h := &Holder{}
	h.p.Store(cfg)
	return h
}

// Load returns the current snapshot. Do not modify it.
func (h *Holder) Load() *Config { return h.p.Load() }

// Store publishes cfg as the current snapshot.
func (h *Holder) Store(cfg *Config) { h.p.Store(cfg) }
