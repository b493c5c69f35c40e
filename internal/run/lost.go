package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/stream"
)

// ReasonGeneratorLost ends a stream whose replica died mid-generation.
const ReasonGeneratorLost = "generator_lost"

// SharedLog is what ending another replica's stream needs from the shared
// stream store: its records, its top seq, and appending after it (which
// fails if the generator appended meanwhile).
type SharedLog interface {
	Subscribe(ctx context.Context, id string, after int64) (stream.Subscription, error)
	LastSeq(ctx context.Context, id string) (int64, error)
	AppendDirect(ctx context.Context, id string, rec stream.Record) error
	MarkBroken(ctx context.Context, id string) error
}

// EndLost ends, on behalf of a replica that died, the generation of
// stream id: it rebuilds the partial answer from the shared log, appends
// an error and stream.finished{failed, generator_lost} so readers on every
// replica stop waiting, and saves the message as failed with what was
// streamed. It is called by exactly one replica (the cluster reaper's
// claim); saving stays exactly-once through FinishMessage anyway.
//
// A generator cut off from Redis (but not from the database) also stops
// renewing its lease. If it finished and saved its answer meanwhile, the
// answer is complete and must not be overwritten: the shared log, which
// missed its events, is only marked broken so readers resync from the
// saved message.
func (m *Manager) EndLost(ctx context.Context, log SharedLog, id string) error {
	if msg, err := m.opts.History.GetMessage(ctx, id); err != nil || msg.Status != history.StatusStreaming {
		if err != nil && !errors.Is(err, history.ErrNotFound) {
			return fmt.Errorf("end lost stream %s: %w", id, err)
		}
		return log.MarkBroken(ctx, id)
	}
	last, err := log.LastSeq(ctx, id)
	if err != nil {
		return fmt.Errorf("end lost stream %s: %w", id, err)
	}
	p := &persister{}
	var open eventbus.OpenBlocks // the main answer's and every subagent's
	fold := func(ev *eventbus.Event) { p.handle(ev); open.Track(ev) }
	if err := replay(ctx, log, id, last, fold); err != nil {
		m.log.Warn("the lost stream's log is incomplete; saving what could be read", zap.String("stream_id", id), zap.Error(err))
	}
	const msg = "The server generating this answer stopped unexpectedly; the answer is incomplete."
	now := time.Now().UnixMilli()
	appendEvent := func(ev eventbus.Event) error {
		ev.Seq, ev.StreamID, ev.Time = last+1, id, now
		data, err := eventbus.AppendJSON(nil, &ev)
		if err != nil {
			return err
		}
		// Fails if the generator appended meanwhile: then it is not dead.
		if err := log.AppendDirect(ctx, id, stream.Record{Seq: ev.Seq, Type: string(ev.Type), Data: data}); err != nil {
			return fmt.Errorf("end lost stream %s: %w", id, err)
		}
		last++
		p.handle(&ev)
		return nil
	}
	// The stream ends as a local one does: open blocks closed (with the
	// </think> a tagged thinking block needs) — a research
	// sub-researcher's too, as its runner would close them — then the error.
	for _, ev := range open.Close() {
		if err := appendEvent(ev); err != nil {
			return err
		}
	}
	if err := appendEvent(eventbus.Of(eventbus.TypeError,
		eventbus.Error{Code: ReasonGeneratorLost, Message: msg, Retryable: true})); err != nil {
		return err
	}
	// As for every stream: the message is saved before stream.finished, so
	// a reader that sees the end finds the saved message final.
	err = m.opts.History.FinishMessage(ctx, id, p.final(eventbus.StatusFailed))
	if err != nil && !errors.Is(err, history.ErrAlreadyFinished) && !errors.Is(err, history.ErrNotFound) {
		return fmt.Errorf("end lost stream %s: save: %w", id, err)
	}
	return appendEvent(eventbus.Of(eventbus.TypeStreamFinished,
		eventbus.Finished{Status: eventbus.StatusFailed, Reason: ReasonGeneratorLost, MessageID: id}))
}

// replay feeds the records 1..last of stream id to fold.
func replay(ctx context.Context, log SharedLog, id string, last int64, fold func(*eventbus.Event)) error {
	sub, err := log.Subscribe(ctx, id, 0)
	if err != nil {
		return err
	}
	defer sub.Close()
	var buf []stream.Record
	for seen := int64(0); seen < last; {
		recs, done, err := sub.Fetch(buf[:0])
		if err != nil {
			return err
		}
		for _, r := range recs {
			ev, err := eventbus.Decode(r.Data)
			if err != nil {
				return err
			}
			fold(&ev)
			seen = r.Seq
		}
		if done {
			return nil
		}
		if len(recs) == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-sub.Ready():
			case <-time.After(2 * time.Second):
				return fmt.Errorf("read %d of %d events", seen, last)
			}
		}
		buf = recs
	}
	return nil
}
