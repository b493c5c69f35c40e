// Package jobs runs the model jobs that follow a turn off the token path
// — a session's title, the summary of its older history — on a bounded
// set of goroutines that the server owns: Close cancels what still runs
// and waits for it, so no job outlives the server and none leaks.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"go.uber.org/zap"
)

// Outcomes a job is counted under.
const (
	Done     = "done"     // returned nil
	Failed   = "failed"   // returned an error or panicked
	Canceled = "canceled" // the runner closed while it ran
	Refused  = "refused"  // not started: the runner was full or closed
)

// Runner runs jobs, a bounded number at once. It is safe for concurrent use.
type Runner struct {
	ctx     context.Context
	cancel  context.CancelFunc
	slots   chan struct{}
	log     *zap.Logger
	observe func(kind, outcome string)

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// New returns a runner of at most limit jobs at once (at least 1). observe,
// when not nil, is told how each job ended (metrics).
func New(limit int, log *zap.Logger, observe func(kind, outcome string)) *Runner {
	if log == nil {
		log = zap.NewNop()
	}
	if observe == nil {
		observe = func(string, string) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{ctx: ctx, cancel: cancel, slots: make(chan struct{}, max(limit, 1)), log: log, observe: observe}
}

// Job is a started job.
type Job struct {
	done chan struct{}
	err  error
}

// Done is closed when the job has returned.
func (j *Job) Done() <-chan struct{} { return j.done }

// Err is what the job returned; read it after Done.
func (j *Job) Err() error { return j.err }

// ErrRefused: the runner was full or closed; the job did not run.
var ErrRefused = errors.New("background job refused: too many running or shutting down")

// Go runs f on its own goroutine with a context that ends when the runner
// closes. It never waits: when its limit of jobs already run or the runner is
// closed, f does not run and Go returns ErrRefused.
func (r *Runner) Go(kind string, f func(ctx context.Context) error) (*Job, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.observe(kind, Refused)
		return nil, ErrRefused
	}
	select {
	case r.slots <- struct{}{}:
	default:
		r.observe(kind, Refused)
		return nil, ErrRefused
	}
	j := &Job{done: make(chan struct{})}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() { <-r.slots }()
		defer close(j.done)
		j.err = r.run(kind, f)
		switch {
		case j.err == nil:
			r.observe(kind, Done)
		case r.ctx.Err() != nil:
			r.observe(kind, Canceled)
		default:
			r.observe(kind, Failed)
		}
	}()
	return j, nil
}

// run calls f, turning a panic into an error.
func (r *Runner) run(kind string, f func(ctx context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("background job panicked", zap.String("kind", kind), zap.Any("panic", v),
				zap.ByteString("stack", debug.Stack()))
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return f(r.ctx)
}

// Close refuses new jobs, lets running ones finish until ctx ends, then
// cancels them and waits until every one has returned. Calling it again
// waits the same way.
func (r *Runner) Close(ctx context.Context) {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		r.cancel()
		<-done
	}
	r.cancel()
}
