package run

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/internal/history"
)

// PartialSaves is how often the answer streamed so far is written to the
// history store while it streams, so that a crash of the server (no final
// save) leaves the text readers had already received: after EveryDeltas
// answer or thinking deltas, or Interval after the oldest unsaved one,
// whichever comes first. Zero in both turns partial saves off.
type PartialSaves struct {
	EveryDeltas int
	Interval    time.Duration
}

func (ps PartialSaves) enabled() bool { return ps.EveryDeltas > 0 || ps.Interval > 0 }

// partialTimeout bounds one partial write; a slow database only delays
// the next one.
const partialTimeout = 5 * time.Second

// startPartialSaves starts the goroutine that writes p's text into
// message id as configured. It runs off the token path: the bus handler
// only appends to p and, every EveryDeltas deltas, nudges this goroutine,
// which takes the snapshot (the builders' strings, no copy) and writes it.
// The returned stop ends the goroutine and waits for it; the run calls it
// before its final save, which the store's streaming guard protects
// anyway. stop may be called more than once.
func (m *Manager) startPartialSaves(id string, p *persister, ps PartialSaves, log *zap.Logger) (stop func()) {
	if !ps.enabled() {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var tick <-chan time.Time
		if ps.Interval > 0 {
			t := time.NewTicker(ps.Interval)
			defer t.Stop()
			tick = t.C
		}
		warned := false
		for {
			select {
			case <-quit:
				return
			case <-p.due:
			case <-tick:
			}
			content, thinking, ok := p.snapshot()
			if !ok {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), partialTimeout)
			err := m.opts.History.SavePartial(ctx, id, content, thinking)
			cancel()
			if err != nil && !errors.Is(err, history.ErrAlreadyFinished) && !errors.Is(err, history.ErrNotFound) && !warned {
				warned = true // once per answer: a database in trouble would flood the log
				log.Warn("saving the partial answer failed; a crash now would lose more of it", zap.Error(err))
			}
		}
	}()
	stopped := false
	return func() {
		if !stopped {
			stopped = true
			close(quit)
			<-done
		}
	}
}
