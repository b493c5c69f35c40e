package run

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/internal/history"
)

// PartialSaves is how often the answer streamed so far is written to the
// history store while it streams, so that a crash of the server (no final
// save) leaves the text readers had already received: after EveryDeltas
// answer or thinking deltas, or Interval after the last save, whichever
// comes first (so no delta waits longer than Interval). A save by count
// restarts the interval: a stream whose deltas come faster than
// EveryDeltas an Interval is saved by count alone, once per EveryDeltas,
// not once more per Interval besides. Zero in both turns partial saves
// off.
type PartialSaves struct {
	EveryDeltas int
	Interval    time.Duration
}

func (ps PartialSaves) enabled() bool { return ps.EveryDeltas > 0 || ps.Interval > 0 }

// partialTimeout bounds one partial write; a slow database only delays
// the next one.
const partialTimeout = 5 * time.Second

// partialWriters bounds the partial writes in flight at once; the SQLite
// store commits those that meet in one transaction.
const partialWriters = 32

// partialSaver writes the partial answers of every live run of a
// manager. One goroutine serves them all (none per stream: at thousands
// of live streams a goroutine and a ticker each cost more memory than
// the stream itself); it runs while at least one run is registered and
// ends when the last one stops. It runs off the token path: the bus
// handler only appends to the persister and, every EveryDeltas deltas,
// marks its run due; the saver takes the snapshot (the builders' strings,
// no copy) and writes it.
type partialSaver struct {
	m    *Manager
	wake chan struct{} // one pending at most

	mu      sync.Mutex
	regs    map[*partialReg]struct{}
	due     []*partialReg // nudged by their persister
	running bool
}

// partialReg is one run's registration.
type partialReg struct {
	id   string
	p    *persister
	ps   PartialSaves
	log  *zap.Logger
	next time.Time // the interval save's time (zero: no interval); guarded by partialSaver.mu

	queued bool // in partialSaver.due; guarded by partialSaver.mu

	saving  sync.Mutex // held by a write of this run's text; stop takes it
	stopped bool       // guarded by saving
	warned  bool       // guarded by saving
}

// startPartialSaves registers p's text to be written into message id as
// configured. The returned stop unregisters it and waits for a write in
// progress; the run calls it before its final save, which the store's
// streaming guard protects anyway. stop may be called more than once.
func (m *Manager) startPartialSaves(id string, p *persister, ps PartialSaves, log *zap.Logger) (stop func()) {
	if !ps.enabled() {
		return func() {}
	}
	s := m.partialSaver()
	r := &partialReg{id: id, p: p, ps: ps, log: log}
	if ps.Interval > 0 {
		r.next = time.Now().Add(ps.Interval)
	}
	if ps.EveryDeltas > 0 {
		p.setNudge(func() { s.nudge(r) })
	}
	s.mu.Lock()
	s.regs[r] = struct{}{}
	if !s.running {
		s.running = true
		go s.loop() // ends when the last run unregisters
	}
	s.mu.Unlock()
	s.signal() // the loop may be asleep until a later interval save
	var once sync.Once
	return func() {
		once.Do(func() {
			r.saving.Lock()
			r.stopped = true
			r.saving.Unlock()
			s.mu.Lock()
			delete(s.regs, r)
			s.mu.Unlock()
			s.signal()
		})
	}
}

func (m *Manager) partialSaver() *partialSaver {
	m.saverOnce.Do(func() {
		m.saver = &partialSaver{m: m, wake: make(chan struct{}, 1), regs: map[*partialReg]struct{}{}}
	})
	return m.saver
}

func (s *partialSaver) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *partialSaver) nudge(r *partialReg) {
	s.mu.Lock()
	if !r.queued {
		r.queued = true
		s.due = append(s.due, r)
	}
	s.mu.Unlock()
	s.signal()
}

func (s *partialSaver) loop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		batch, next, ok := s.take(time.Now())
		if !ok {
			return
		}
		s.save(batch)
		if len(batch) > 0 {
			continue // more may have come due while writing
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-s.wake:
		case <-timer.C:
		}
		if !timer.Stop() {
			select { // drain a fire that raced with the wake
			case <-timer.C:
			default:
			}
		}
	}
}

// take returns the runs to write now (nudged, or their interval passed)
// and the time of the next interval save; ok is false when no run is
// registered, and then the loop has ended (running is false).
func (s *partialSaver) take(now time.Time) (batch []*partialReg, next time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.regs) == 0 {
		s.running = false
		s.due = nil
		return nil, time.Time{}, false
	}
	for _, r := range s.due {
		r.queued = false
		if _, live := s.regs[r]; live {
			batch = append(batch, r)
		}
	}
	s.due = s.due[:0]
	for r := range s.regs {
		if r.next.IsZero() {
			continue
		}
		if !r.next.After(now) {
			r.next = now.Add(r.ps.Interval)
			batch = append(batch, r) // a duplicate of a nudged run just finds nothing new
		}
		if next.IsZero() || r.next.Before(next) {
			next = r.next
		}
	}
	return batch, next, true
}

// restartInterval puts r's next interval save Interval after a save that
// took its snapshot at `at`: what arrives after the snapshot is saved
// within Interval of it, by the count or by the interval.
func (s *partialSaver) restartInterval(r *partialReg, at time.Time) {
	if r.ps.Interval <= 0 {
		return
	}
	s.mu.Lock()
	r.next = at.Add(r.ps.Interval)
	s.mu.Unlock()
}

// save writes the batch, partialWriters at a time.
func (s *partialSaver) save(batch []*partialReg) {
	sem := make(chan struct{}, partialWriters)
	var wg sync.WaitGroup
	for _, r := range batch {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s.m.savePartial(r)
		})
	}
	wg.Wait()
}

func (m *Manager) savePartial(r *partialReg) {
	r.saving.Lock()
	defer r.saving.Unlock()
	if r.stopped || m.waitTurn(r.id) != nil {
		return
	}
	content, thinking, ok := r.p.snapshot()
	if !ok {
		return
	}
	m.saver.restartInterval(r, time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), partialTimeout)
	err := m.opts.History.SavePartial(ctx, r.id, content, thinking)
	cancel()
	if err != nil && !errors.Is(err, history.ErrAlreadyFinished) && !errors.Is(err, history.ErrNotFound) && !r.warned {
		r.warned = true // once per answer: a database in trouble would flood the log
		r.log.Warn("saving the partial answer failed; a crash now would lose more of it", zap.Error(err))
	}
}
