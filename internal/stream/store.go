// Package stream keeps each stream's event log: the recorder appends every
// event with its seq, and readers replay after a cursor and then tail the
// live log. Implementations: Memory (the embedded default), redisstore
// (shared by several replicas) and Tiered, which writes to both and serves
// the generating replica's readers from memory. streamtest is the suite
// every implementation passes.
package stream

import (
	"context"
	"errors"
)

// Record is one stored event: its seq, its type and its encoded JSON object
// (exactly the SSE data line). Data is immutable once appended.
type Record struct {
	Seq  int64
	Type string
	Data []byte
}

// Sentinel errors callers branch on.
var (
	// ErrNotFound: the store holds no stream with that id (never existed,
	// or expired after it finished).
	ErrNotFound = errors.New("stream not found")
	// ErrExpired: the events right after the reader's cursor are no longer
	// retained; the reader must resync from the saved message.
	ErrExpired = errors.New("stream replay window expired")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("stream store closed")
	// ErrUnavailable: a shared store cannot be reached right now, so it
	// cannot tell whether or where the stream continues; the reader may
	// retry later or resync from the saved message.
	ErrUnavailable = errors.New("stream store unavailable")
)

// Store is a set of append-only event logs, one per stream.
type Store interface {
	// Create starts an empty, live stream.
	Create(ctx context.Context, id string) error
	// Append adds a record; seqs are 1, 2, 3… as the stream's bus stamps them.
	// It never waits for readers.
	Append(ctx context.Context, id string, rec Record) error
	// Finish marks the stream complete; readers drain and end, and the log
	// is kept for the store's retention time.
	Finish(ctx context.Context, id string) error
	// Subscribe returns a reader positioned after seq `after` (0 = from the
	// start). It fails with ErrNotFound or ErrExpired.
	Subscribe(ctx context.Context, id string, after int64) (Subscription, error)
	// Close releases the store's resources and background work.
	Close() error
}

// Subscription reads one stream from a cursor onward.
type Subscription interface {
	// Fetch appends to buf the records after the cursor that are available
	// now, without blocking, and advances the cursor. done is true once the
	// stream is finished and every record has been returned. It fails with
	// ErrExpired when the reader fell behind the retained window.
	Fetch(buf []Record) (recs []Record, done bool, err error)
	// Ready is signalled when records may be available after a Fetch that
	// returned none.
	Ready() <-chan struct{}
	// Close releases the subscription.
	Close()
}

// Notifier is implemented by subscriptions that can call a function
// instead of signalling Ready, so that a reader needs no goroutine waiting
// for it (the memory store's): after Notify(f), f is called whenever
// records may be available, from the appending goroutine with the
// stream's lock held — it must return at once and must not call into the
// store. Ready is then no longer signalled.
type Notifier interface {
	Notify(f func())
}
