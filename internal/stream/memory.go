package stream

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// MemoryOptions bounds the in-memory store.
type MemoryOptions struct {
	MaxEvents int   // events retained per stream; older ones are dropped first
	MaxBytes  int64 // encoded bytes retained per stream
	// MaxTotalBytes bounds the store, all streams together (encoded
	// bytes plus a record's bookkeeping); <= 0 = AutoMaxTotalBytes.
	// Beyond it, finished streams lose their logs oldest first, then the
	// largest live stream loses its oldest events: readers behind the cut
	// get ErrExpired (resync from the saved message), never a gap.
	MaxTotalBytes int64
	Retention     time.Duration // how long a finished stream stays replayable
	Sweep         time.Duration // how often expired streams are removed
}

func (o *MemoryOptions) defaults() {
	if o.MaxEvents <= 0 {
		o.MaxEvents = 20000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 8 << 20
	}
	o.MaxBytes = min(o.MaxBytes, maxStreamBytes)
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = AutoMaxTotalBytes()
	}
	if o.Retention <= 0 {
		o.Retention = 10 * time.Minute
	}
	if o.Sweep <= 0 {
		o.Sweep = min(o.Retention/2, 30*time.Second)
	}
}

// Memory is the embedded stream store: a bounded log per stream, readers
// woken by a per-reader signal (no polling), finished streams kept for
// Retention. A slow reader never blocks Append: it reads at its own pace
// and gets ErrExpired if the window moved past it.
type Memory struct {
	opts MemoryOptions

	mu      sync.RWMutex
	streams map[string]*memStream
	closed  bool
	types   typeNames

	total    atomic.Int64 // retained cost of every stream (see recordCost)
	evicting sync.Mutex   // one eviction at a time; others go on appending
	// stuckAt is the total an eviction could not bring under the limit
	// (live streams down to their newest event); appends retry only once
	// the total grew past it, or a stream finished, so a store that cannot
	// shrink is not scanned at every append.
	stuckAt atomic.Int64

	stop chan struct{}
	done chan struct{}
}

type memStream struct {
	mu sync.Mutex
	// The retained records, packed (packed.go): record i's entry starts at
	// log[offs[i]]; offs[head:] are retained, their seqs contiguous up to
	// lastSeq. A large record's data is shared[n-sharedBase], n its number.
	log        []byte
	offs       []uint32
	head       int
	shared     [][]byte
	sharedBase int
	sharedGone int    // shared[:sharedGone] were dropped
	qid        []byte // the stream id as written in its events
	baseTS     int64  // the time of its first event
	bytes      int64  // retained: entries in the log and large records' data
	lastSeq    int64
	finished   bool
	finishedAt time.Time
	closed     bool
	subs       []*memSub
}

type memSub struct {
	m      *Memory
	st     *memStream
	cursor int64
	ready  chan struct{}
	notify func() // set by Notify: called instead of signalling ready
}

// NewMemory returns a memory store and starts its sweeper; Close stops it.
func NewMemory(opts MemoryOptions) *Memory {
	opts.defaults()
	m := &Memory{
		opts:    opts,
		streams: make(map[string]*memStream),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go m.sweepLoop()
	return m
}

func (m *Memory) get(id string) (*memStream, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	st, ok := m.streams[id]
	if !ok {
		return nil, ErrNotFound
	}
	return st, nil
}

// Create starts an empty, live stream.
func (m *Memory) Create(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if _, ok := m.streams[id]; ok {
		return fmt.Errorf("stream %s already exists", id)
	}
	m.streams[id] = &memStream{}
	return nil
}

// Append adds rec and wakes the stream's readers.
func (m *Memory) Append(_ context.Context, id string, rec Record) error {
	st, err := m.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	if st.finished {
		st.mu.Unlock()
		return fmt.Errorf("stream %s: append after finish", id)
	}
	if rec.Seq != st.lastSeq+1 {
		st.mu.Unlock()
		return fmt.Errorf("stream %s: append seq %d after %d", id, rec.Seq, st.lastSeq)
	}
	logBytes, sharedBytes := st.pack(&m.types, rec)
	st.lastSeq = rec.Seq
	st.bytes += int64(logBytes + sharedBytes)
	added := entryCost(logBytes, sharedBytes)
	for len(st.offs)-st.head > 1 &&
		(len(st.offs)-st.head > m.opts.MaxEvents || st.bytes > m.opts.MaxBytes) {
		added -= st.dropOldest(&m.types)
	}
	st.compact()
	st.wake()
	st.mu.Unlock()
	if total := m.total.Add(added); total > m.opts.MaxTotalBytes && total > m.stuckAt.Load()+m.opts.MaxTotalBytes/16 {
		m.evict()
	}
	return nil
}

// recordOverhead is what a retained record costs beyond its entry: its
// offset, with the slice's growth; a large record's slice header besides.
const (
	recordOverhead = 8
	sharedOverhead = 24
)

func entryCost(logBytes, sharedBytes int) int64 {
	c := int64(logBytes+sharedBytes) + recordOverhead
	if sharedBytes > 0 {
		c += sharedOverhead
	}
	return c
}

// dropOldest drops the oldest retained record and returns its cost; the
// caller holds st.mu.
func (st *memStream) dropOldest(types *typeNames) int64 {
	e := st.entry(types, st.head)
	shared := 0
	if e.kind == packedShared {
		shared = len(e.data)
		st.shared[st.sharedGone] = nil // the oldest large record is this one
		st.sharedGone++
	}
	st.bytes -= int64(e.size + shared)
	st.head++
	return entryCost(e.size, shared)
}

// compact gives back what dropped records held once it is most of the
// log (a new log: readers may still hold data that aliases the old one);
// the caller holds st.mu.
func (st *memStream) compact() {
	if st.head == len(st.offs) {
		st.log, st.offs, st.head = nil, nil, 0 // all dropped: give the arrays back
		st.sharedBase += len(st.shared)
		st.shared, st.sharedGone = nil, 0
		return
	}
	if dead := int(st.offs[st.head]); st.head >= 32 && (2*st.head > len(st.offs) || 2*dead > len(st.log)) {
		st.log = append(make([]byte, 0, len(st.log)-dead+len(st.log)/8), st.log[dead:]...)
		n := copy(st.offs, st.offs[st.head:])
		for i := range st.offs[:n] {
			st.offs[i] -= uint32(dead)
		}
		st.offs = st.offs[:n:n]
		st.head = 0
	}
	if st.sharedGone > 0 && 2*st.sharedGone >= len(st.shared) {
		st.shared = append([][]byte(nil), st.shared[st.sharedGone:]...)
		st.sharedBase += st.sharedGone
		st.sharedGone = 0
	}
}

// cost is what the stream's retained records cost; the caller holds st.mu.
func (st *memStream) cost() int64 {
	return st.bytes + int64(len(st.offs)-st.head)*recordOverhead + int64(len(st.shared)-st.sharedGone)*sharedOverhead
}

// wake signals every reader without blocking; the caller holds st.mu.
func (st *memStream) wake() {
	for _, s := range st.subs {
		if s.notify != nil {
			s.notify()
			continue
		}
		select {
		case s.ready <- struct{}{}:
		default:
		}
	}
}

// Finish marks the stream complete and wakes its readers.
func (m *Memory) Finish(_ context.Context, id string) error {
	st, err := m.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.finished {
		st.finished = true
		st.finishedAt = time.Now()
		st.wake()
		m.stuckAt.Store(0) // its log can be evicted now
	}
	return nil
}

// Subscribe returns a reader after seq `after`.
func (m *Memory) Subscribe(_ context.Context, id string, after int64) (Subscription, error) {
	st, err := m.get(id)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if after < 0 {
		after = 0
	}
	if after < st.firstSeq()-1 {
		return nil, ErrExpired
	}
	s := &memSub{m: m, st: st, cursor: after, ready: make(chan struct{}, 1)}
	st.subs = append(st.subs, s)
	return s, nil
}

// firstSeq is the seq of the oldest retained record (lastSeq+1 when empty);
// the caller holds st.mu.
func (st *memStream) firstSeq() int64 {
	return st.lastSeq - int64(len(st.offs)-st.head) + 1
}

// Fetch returns the records after the cursor that are retained now.
func (s *memSub) Fetch(buf []Record) ([]Record, bool, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return buf, false, ErrClosed
	}
	first := st.firstSeq()
	if s.cursor < first-1 {
		return buf, false, ErrExpired
	}
	if s.cursor < st.lastSeq {
		buf = st.unpack(&s.m.types, buf, st.head+int(s.cursor+1-first), s.cursor+1)
		s.cursor = st.lastSeq
	}
	return buf, st.finished && s.cursor >= st.lastSeq, nil
}

// Ready is signalled after an append or finish.
func (s *memSub) Ready() <-chan struct{} { return s.ready }

// Notify implements Notifier.
func (s *memSub) Notify(f func()) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.notify = f
}

// Close detaches the reader.
func (s *memSub) Close() {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	for i, x := range st.subs {
		if x == s {
			st.subs = append(st.subs[:i], st.subs[i+1:]...)
			break
		}
	}
}

func (m *Memory) sweepLoop() {
	defer close(m.done)
	t := time.NewTicker(m.opts.Sweep)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case now := <-t.C:
			m.sweep(now)
		}
	}
}

// sweep drops finished streams older than the retention time.
func (m *Memory) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, st := range m.streams {
		st.mu.Lock()
		expired := st.finished && now.Sub(st.finishedAt) > m.opts.Retention
		if expired {
			st.closed = true
			m.total.Add(-st.cost())
			st.log, st.offs, st.head, st.shared, st.sharedGone, st.bytes = nil, nil, 0, nil, 0, 0 // cost 0 from now on: an eviction racing this cannot count it twice
			st.wake()
		}
		st.mu.Unlock()
		if expired {
			delete(m.streams, id)
		}
	}
}

// Bytes reports what the retained records of every stream cost (for
// metrics and tests).
func (m *Memory) Bytes() int64 { return m.total.Load() }

// Len reports how many streams the store holds (for metrics and tests).
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.streams)
}

// Close stops the sweeper and ends every reader with ErrClosed.
func (m *Memory) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	for _, st := range m.streams {
		st.mu.Lock()
		st.closed = true
		st.wake()
		st.mu.Unlock()
	}
	m.mu.Unlock()
	close(m.stop)
	<-m.done
	return nil
}

var (
	_ Store    = (*Memory)(nil)
	_ Notifier = (*memSub)(nil)
)
