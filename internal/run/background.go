package run

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/jobs"
)

// background is one run's view of the manager's job runner (it implements
// conversation.Background): the events of a job that ends while the stream is
// open are emitted on it, and the run waits a bounded time for its jobs
// before stream.finished (see awaitJobs).
type background struct {
	runner *jobs.Runner // nil: no job runs
	g      *guard
	log    *zap.Logger

	mu      sync.Mutex
	started []*jobs.Job
}

// Go implements conversation.Background.
func (b *background) Go(kind string, job func(ctx context.Context) ([]eventbus.Event, error)) bool {
	if b.runner == nil {
		return false
	}
	j, err := b.runner.Go(kind, func(ctx context.Context) error {
		evs, err := job(ctx)
		for _, ev := range evs {
			b.g.emitInternal(ev) // dropped by the guard once the stream has finished
		}
		if err != nil && ctx.Err() == nil {
			b.log.Warn("background job failed", zap.String("kind", kind), zap.Error(err))
		}
		return err
	})
	if err != nil {
		b.log.Warn("background job not started", zap.String("kind", kind), zap.Error(err))
		return false
	}
	b.mu.Lock()
	b.started = append(b.started, j)
	b.mu.Unlock()
	return true
}

// awaitJobs waits until every job the run started has ended, or wait has
// passed; jobs still running then go on without the stream. A run ended
// by the server shutting down does not wait.
func (b *background) awaitJobs(runCtx context.Context, wait time.Duration) {
	b.mu.Lock()
	started := b.started
	b.mu.Unlock()
	if len(started) == 0 || wait <= 0 || errors.Is(context.Cause(runCtx), ErrShutdown) {
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for _, j := range started {
		select {
		case <-j.Done():
		case <-timer.C:
			return
		}
	}
}
