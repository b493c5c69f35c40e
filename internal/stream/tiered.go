package stream

import (
	"context"
	"errors"
	"fmt"
)

// Tiered writes every stream to a local store and a shared one, and reads
// from the local store when it has the stream. The generating replica's
// readers are served from memory (fast, and unaffected when the shared
// store is slow or down); readers on other replicas find the stream only
// in the shared store.
type Tiered struct {
	local, shared Store
}

// NewTiered returns a store over local (written synchronously) and shared
// (written as it writes, e.g. queued). Close closes both.
func NewTiered(local, shared Store) Store {
	return &Tiered{local: local, shared: shared}
}

// Create creates the stream in both stores. When the shared store refuses,
// the local stream is finished so that it expires, and the error returned.
func (t *Tiered) Create(ctx context.Context, id string) error {
	if err := t.local.Create(ctx, id); err != nil {
		return err
	}
	if err := t.shared.Create(ctx, id); err != nil {
		_ = t.local.Finish(ctx, id)
		return fmt.Errorf("shared stream store: %w", err)
	}
	return nil
}

// Append appends to the local store, then to the shared one. A shared
// failure is returned (the recorder reports it once) but the record is in
// the local store and its readers have it.
func (t *Tiered) Append(ctx context.Context, id string, rec Record) error {
	if err := t.local.Append(ctx, id, rec); err != nil {
		return err
	}
	if err := t.shared.Append(ctx, id, rec); err != nil {
		return fmt.Errorf("shared stream store: %w", err)
	}
	return nil
}

// Finish finishes the stream in both stores.
func (t *Tiered) Finish(ctx context.Context, id string) error {
	errLocal := t.local.Finish(ctx, id)
	errShared := t.shared.Finish(ctx, id)
	if errShared != nil {
		errShared = fmt.Errorf("shared stream store: %w", errShared)
	}
	return errors.Join(errLocal, errShared)
}

// Subscribe reads from the local store when it holds the stream, else
// from the shared store.
func (t *Tiered) Subscribe(ctx context.Context, id string, after int64) (Subscription, error) {
	sub, err := t.local.Subscribe(ctx, id, after)
	if errors.Is(err, ErrNotFound) {
		return t.shared.Subscribe(ctx, id, after)
	}
	return sub, err
}

// Close closes both stores.
func (t *Tiered) Close() error {
	return errors.Join(t.local.Close(), t.shared.Close())
}

var _ Store = (*Tiered)(nil)
