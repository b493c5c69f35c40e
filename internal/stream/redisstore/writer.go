package redisstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// writer is the state of the single writer goroutine: it drains the
// queue into pipelines, so one round trip carries every event queued
// meanwhile, whatever the number of streams.
type writer struct {
	s        *Store
	batch    []op
	owners   []cmdOwner // owner of each command of the pipeline being built
	finished []*wstream // streams whose finish is in the pipeline
}

type cmdOwner struct {
	st       *wstream
	tolerant bool // an "ID equal or smaller" error is expected and harmless
}

func (s *Store) writeLoop() {
	defer s.wg.Done()
	w := &writer{s: s}
	var retry <-chan time.Time // armed while broken flags wait for Redis
	sweep := time.NewTicker(time.Minute)
	defer sweep.Stop()
	ctx := context.Background()
	for {
		select {
		case o := <-s.queue:
			w.batch = append(w.batch, o)
			w.drain(maxBatch - 1)
			w.write(ctx)
		case done := <-s.flushc:
			// Every op queued before Flush is among the first n now.
			for n := len(s.queue); n > 0; {
				k := w.drain(min(n, maxBatch))
				if k == 0 {
					break
				}
				n -= k
				w.write(ctx)
			}
			err := w.writeFlags(ctx)
			if err != nil && retry == nil {
				retry = time.After(flagRetry)
			}
			done <- err
		case <-s.brokenc:
			// Flags go out on the next retry tick when one is armed: a
			// down Redis is not hammered once per newly broken stream.
			if retry == nil && w.writeFlags(ctx) != nil {
				retry = time.After(flagRetry)
			}
		case <-retry:
			retry = nil
			if w.writeFlags(ctx) != nil {
				retry = time.After(flagRetry)
			}
		case now := <-sweep.C:
			w.sweep(now)
		case <-s.stop:
			w.closeDrain()
			return
		}
	}
}

// drain moves up to n queued ops into the batch without waiting.
func (w *writer) drain(n int) int {
	for i := 0; i < n; i++ {
		select {
		case o := <-w.s.queue:
			w.batch = append(w.batch, o)
		default:
			return i
		}
	}
	return n
}

// closeDrain writes what is still queued, bounded in time.
func (w *writer) closeDrain() {
	ctx, cancel := context.WithTimeout(context.Background(), closeDrain)
	defer cancel()
	for ctx.Err() == nil && w.drain(maxBatch) > 0 {
		w.write(ctx)
	}
	_ = w.writeFlags(ctx)
}

// write sends the batch as one pipeline and marks broken every stream
// with a failed command.
func (w *writer) write(ctx context.Context) {
	s := w.s
	now := time.Now()
	pipe := s.client.Pipeline()
	w.owners = w.owners[:0]
	w.finished = w.finished[:0]
	for _, o := range w.batch {
		st := o.st
		if st.broken.Load() {
			continue // its flag is written by writeFlags; later events are lost anyway
		}
		st.touched = now
		switch o.kind {
		case opAppend:
			pipe.XAdd(ctx, &redis.XAddArgs{
				Stream: st.key, MaxLen: s.maxEvents, Approx: true,
				ID: entryID(o.rec.Seq, 0), Values: []any{"type", o.rec.Type, "data", o.rec.Data},
			})
			w.own(st, false, 1)
			st.written = o.rec.Seq
			// After the XADD, which creates the key on the first event.
			if now.Sub(st.renewedAt) >= s.renewEvery {
				st.renewedAt = now
				pipe.HSet(ctx, st.meta, "last", st.written)
				pipe.Expire(ctx, st.key, s.cfg.LiveTTL)
				pipe.Expire(ctx, st.meta, s.cfg.LiveTTL)
				w.own(st, false, 3)
			}
		case opFinish:
			// The flag goes first: a reader woken by the marker finds the
			// meta already finished.
			pipe.HSet(ctx, st.meta, "finished", 1, "last", st.written)
			pipe.XAdd(ctx, &redis.XAddArgs{
				Stream: st.key, MaxLen: s.maxEvents, Approx: true,
				ID: entryID(st.written, 1), Values: []any{"ctl", "finished"},
			})
			pipe.Expire(ctx, st.key, s.cfg.FinishedTTL)
			pipe.Expire(ctx, st.meta, s.cfg.FinishedTTL)
			w.own(st, false, 4)
			w.finished = append(w.finished, st)
		}
	}
	clear(w.batch)
	w.batch = w.batch[:0]
	if len(w.owners) == 0 {
		return
	}
	cmds, _ := pipe.Exec(ctx)
	var (
		firstErr error
		broken   int
	)
	for i, c := range cmds {
		err := c.Err()
		if err == nil || i >= len(w.owners) {
			continue
		}
		st := w.owners[i].st
		if firstErr == nil {
			firstErr = err
		}
		if !st.broken.Load() {
			broken++
			s.markBroken(st, "write failed: "+err.Error())
		}
	}
	if broken > 0 {
		s.log.Warn("redis stream store: write failed", zap.Int("streams_broken", broken), zap.Error(firstErr))
	}
	for _, st := range w.finished {
		if !st.broken.Load() {
			s.forget(st)
		}
	}
}

func (w *writer) own(st *wstream, tolerant bool, n int) {
	for range n {
		w.owners = append(w.owners, cmdOwner{st: st, tolerant: tolerant})
	}
}

// writeFlags writes the broken flag (and the finished state, if any) of
// every pending stream; streams whose flag could not be written stay
// pending for the next attempt.
func (w *writer) writeFlags(ctx context.Context) error {
	s := w.s
	s.pendingMu.Lock()
	if len(s.pending) == 0 {
		s.pendingMu.Unlock()
		return nil
	}
	sts := make([]*wstream, 0, len(s.pending))
	for st := range s.pending {
		sts = append(sts, st)
	}
	clear(s.pending)
	s.pendingMu.Unlock()

	now := time.Now()
	pipe := s.client.Pipeline()
	w.owners = w.owners[:0]
	finished := make([]bool, len(sts))
	for i, st := range sts {
		st.touched = now
		st.mu.Lock()
		finished[i] = st.finished
		st.mu.Unlock()
		ttl := s.cfg.LiveTTL
		if finished[i] {
			ttl = s.cfg.FinishedTTL
			pipe.HSet(ctx, st.meta, "broken", 1, "finished", 1)
		} else {
			pipe.HSet(ctx, st.meta, "broken", 1)
		}
		// The marker wakes tailing readers at once. It sorts after every
		// event this store may have written; a record appended later by
		// another replica makes it fail, which the flag makes harmless.
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: st.key, ID: entryID(st.written, 2), Values: []any{"ctl", "broken"}})
		pipe.Expire(ctx, st.key, ttl)
		pipe.Expire(ctx, st.meta, ttl)
		w.own(st, false, 1)
		w.own(st, true, 1)
		w.own(st, false, 2)
	}
	cmds, _ := pipe.Exec(ctx)
	failed := make(map[*wstream]error)
	for i, c := range cmds {
		err := c.Err()
		if err == nil || i >= len(w.owners) {
			continue
		}
		if w.owners[i].tolerant && strings.Contains(err.Error(), "equal or smaller") {
			continue
		}
		// EXPIRE of a key that does not exist is not an error: it returns 0.
		failed[w.owners[i].st] = err
	}
	var firstErr error
	for i, st := range sts {
		if err, ok := failed[st]; ok {
			if firstErr == nil {
				firstErr = err
			}
			s.addPendingQuiet(st)
			continue
		}
		if finished[i] {
			s.forget(st)
		}
	}
	if firstErr != nil {
		return fmt.Errorf("redis stream store: %d broken-stream flags not written yet: %w", len(failed), firstErr)
	}
	return nil
}

// addPendingQuiet re-queues a flag without waking the writer (which is
// the caller and arms its own retry).
func (s *Store) addPendingQuiet(st *wstream) {
	s.pendingMu.Lock()
	s.pending[st] = struct{}{}
	s.pendingMu.Unlock()
}

// sweep forgets streams idle for longer than live_ttl: their keys have
// expired in Redis, and a generator that never finished leaks nothing.
func (w *writer) sweep(now time.Time) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, st := range s.streams {
		if !st.touched.IsZero() && now.Sub(st.touched) > s.cfg.LiveTTL {
			delete(s.streams, id)
		}
	}
}
