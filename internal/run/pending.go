package run

import (
	"context"
	"errors"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/stream"
)

// PendingApprovals reads stream id's log up to seq upTo (0 = all it holds
// now) and returns, as stored, the tool_call.approval_request records
// whose call has no approval_decision in that range — the requests a
// reader resuming after upTo must be shown again. A finished stream has
// none. The log is the shared one with a Redis stream store, so any
// replica can answer. A log whose start is no longer retained gives none.
func PendingApprovals(ctx context.Context, store stream.Store, id string, upTo int64) ([]stream.Record, error) {
	pending, _, err := pendingIn(ctx, store, id, upTo)
	return pending, err
}

// StillPending returns, for a reader resuming after seq after, the
// approval requests it saw (seq ≤ after) that are still undecided now,
// and the last seq of the log as read: the reader is sent the gap
// (after, last] first — which may hold decisions, and requests of its
// own — and these requests again only then, before the live tail.
func StillPending(ctx context.Context, store stream.Store, id string, after int64) (pending []stream.Record, last int64, err error) {
	all, last, err := pendingIn(ctx, store, id, 0)
	for _, r := range all {
		if r.Seq <= after {
			pending = append(pending, r)
		}
	}
	return pending, last, err
}

// pendingIn reads the log up to upTo (0 = all it holds now) and returns
// the undecided requests and the last seq read.
func pendingIn(ctx context.Context, store stream.Store, id string, upTo int64) ([]stream.Record, int64, error) {
	sub, err := store.Subscribe(ctx, id, 0)
	if errors.Is(err, stream.ErrExpired) || errors.Is(err, stream.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer sub.Close()
	var (
		pending []stream.Record
		buf     []stream.Record
		last    int64
	)
	for {
		recs, done, err := sub.Fetch(buf[:0])
		if errors.Is(err, stream.ErrExpired) {
			return nil, 0, nil
		}
		if err != nil {
			return nil, 0, err
		}
		for _, r := range recs {
			if upTo > 0 && r.Seq > upTo {
				return pending, last, nil
			}
			last = r.Seq
			switch eventbus.Type(r.Type) {
			case eventbus.TypeToolCallApprovalRequest:
				pending = append(pending, stream.Record{Seq: r.Seq, Type: r.Type, Data: append([]byte(nil), r.Data...)})
			case eventbus.TypeToolCallApprovalDecision:
				pending = decided(pending, r)
			case eventbus.TypeStreamFinished:
				return nil, last, nil
			}
		}
		if done || len(recs) == 0 {
			return pending, last, nil
		}
		buf = recs
	}
}

// decided drops the request the decision record d answers.
func decided(pending []stream.Record, d stream.Record) []stream.Record {
	ev, err := eventbus.Decode(d.Data)
	if err != nil {
		return pending
	}
	a, ok := ev.Payload.(eventbus.ToolApproval)
	if !ok {
		return pending
	}
	out := pending[:0]
	for _, p := range pending {
		if pe, err := eventbus.Decode(p.Data); err == nil {
			if pa, ok := pe.Payload.(eventbus.ToolApproval); ok && pa.ToolCallID == a.ToolCallID {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// PendingApproval reports whether tool call toolCallID of stream id waits
// for a decision, as its log says.
func PendingApproval(ctx context.Context, store stream.Store, id, toolCallID string) (bool, error) {
	pending, err := PendingApprovals(ctx, store, id, 0)
	if err != nil {
		return false, err
	}
	for _, p := range pending {
		if ev, err := eventbus.Decode(p.Data); err == nil {
			if a, ok := ev.Payload.(eventbus.ToolApproval); ok && a.ToolCallID == toolCallID {
				return true, nil
			}
		}
	}
	return false, nil
}
