package history

import (
	"context"
	"time"
)

// TraceStore keeps the turn inspector's record of each assistant message
// (what every stage did), in a table of its own keyed by the message and
// deleted with it. Both history stores implement it.
type TraceStore interface {
	// SaveTrace stores (or replaces) the record of the assistant message
	// messageID. ErrNotFound when the message no longer exists.
	SaveTrace(ctx context.Context, messageID string, record []byte) error
	// GetTrace returns the record of messageID and when it was saved, when
	// the message's session belongs to tenantID; ErrNotFound otherwise
	// (another tenant's message is indistinguishable from none).
	GetTrace(ctx context.Context, tenantID, messageID string) ([]byte, time.Time, error)
	// PurgeTraces deletes the records saved before cutoff and returns how
	// many it deleted.
	PurgeTraces(ctx context.Context, cutoff time.Time) (int64, error)
}
