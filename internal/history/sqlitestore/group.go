package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

// Group commit. SQLite has one writer; when many answers start, save
// partial text or finish at once, each write used to wait for the one
// before it to begin, run and commit its own transaction. Now a write
// joins a queue, and the first writer that finds nobody running the
// queue leads: it runs everything queued so far in one transaction, each
// write inside its own savepoint so that a write that fails is undone
// alone, commits once, reports every outcome, and hands the lead to the
// first write that queued meanwhile. No goroutine of its own: the callers
// take turns, and a leader runs at most one batch past its own write.

// maxBatch bounds one transaction, so a leader's wait stays short.
const maxBatch = 64

type writeFunc func(tx *sql.Tx, now time.Time) error

type writeReq struct {
	ctx  context.Context
	fn   writeFunc
	done chan error    // the outcome, buffered
	lead chan struct{} // closed when this caller must lead the next batch
}

type committer struct {
	mu      sync.Mutex
	queue   []*writeReq
	leading bool

	batches, batched int // transactions run with more than one write, and the writes in them (tests)
}

// write runs fn in a transaction on the writer, possibly together with
// other writes (group commit); fn's effects commit if and only if it
// returns nil and the batch's commit succeeds, and its error is returned
// as is. now is taken when fn starts, so times increase in commit order.
func (s *Store) write(ctx context.Context, fn writeFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1), lead: make(chan struct{})}
	c := &s.group
	c.mu.Lock()
	c.queue = append(c.queue, req)
	if c.leading {
		c.mu.Unlock()
		select {
		case err := <-req.done:
			return err
		case <-req.lead:
		}
	} else {
		c.leading = true
		c.mu.Unlock()
	}
	// Lead one batch (ours is in it: the queue is first in, first out and
	// a leader takes from its head), then pass the lead on.
	c.mu.Lock()
	n := min(len(c.queue), maxBatch)
	batch := c.queue[:n:n]
	c.queue = c.queue[n:]
	c.mu.Unlock()
	s.runBatch(batch)
	c.mu.Lock()
	if len(c.queue) > 0 {
		close(c.queue[0].lead)
	} else {
		c.leading = false
		c.queue = nil
	}
	c.mu.Unlock()
	return <-req.done
}

// runBatch runs the writes of one batch and reports each outcome.
func (s *Store) runBatch(batch []*writeReq) {
	defer s.stmts.preparePending(context.Background(), s.writer)
	if len(batch) == 1 {
		batch[0].done <- s.runAlone(batch[0])
		return
	}
	s.group.mu.Lock()
	s.group.batches++
	s.group.batched += len(batch)
	s.group.mu.Unlock()

	errs := make([]error, len(batch))
	if ok := s.runTogether(batch, errs); !ok {
		// The transaction broke (a statement that aborts it, or the
		// commit failed): nothing of it was kept, so run each write that
		// had not failed on its own, to give it its own true outcome.
		for i, r := range batch {
			if errs[i] == nil {
				errs[i] = s.runAlone(r)
			}
		}
	}
	for i, r := range batch {
		r.done <- errs[i]
	}
}

func (s *Store) runAlone(r *writeReq) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	tx, err := s.writer.BeginTx(context.Background(), nil)
	if err != nil {
		return err
	}
	if err := r.fn(tx, s.clock.Now()); err != nil {
		return errors.Join(err, sqlitedb.IgnoreDone(tx.Rollback()))
	}
	return tx.Commit()
}

// runTogether runs the batch in one transaction, each write in a
// savepoint, and records each write's own error in errs. It reports
// false when the transaction itself was lost; then errs holds only the
// writes' own errors.
func (s *Store) runTogether(batch []*writeReq, errs []error) bool {
	ctx := context.Background()
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return true
	}
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT w"); err != nil {
			_ = tx.Rollback()
			return false
		}
		if err := r.fn(tx, s.clock.Now()); err != nil {
			errs[i] = err
			if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO w"); rerr != nil {
				_ = tx.Rollback()
				return false
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE w"); err != nil {
			_ = tx.Rollback()
			return false
		}
	}
	if err := tx.Commit(); err != nil {
		return false
	}
	return true
}
