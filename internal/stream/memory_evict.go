package stream

import (
	"slices"
	"time"
)

// evict brings the store's total cost back under MaxTotalBytes, down to
// a low-water mark 1/8 below it so that eviction runs once per eighth of
// the budget appended, not at every append. It is the global bound of
// the store, in this order:
//
//  1. Finished streams lose their whole log, oldest finished first. Their
//     answers are saved; a reader replaying one gets ErrExpired and
//     reloads the saved message (resync_required), as after retention.
//  2. If live streams alone exceed the budget, the largest live stream
//     loses its oldest events, half of its log at a time, keeping at
//     least its newest event. A reader still behind the cut gets
//     ErrExpired — the slow-reader contract — never a silent gap; readers
//     that keep up (the usual case) lose nothing, as they already have
//     those events.
//
// Appends go on meanwhile: a concurrent append that finds an eviction
// running leaves the work to it.
func (m *Memory) evict() {
	if !m.evicting.TryLock() {
		return
	}
	defer m.evicting.Unlock()
	limit := m.opts.MaxTotalBytes
	low := limit - limit/8
	if m.total.Load() <= limit {
		return
	}
	m.mu.RLock()
	all := make([]*memStream, 0, len(m.streams))
	for _, st := range m.streams {
		all = append(all, st)
	}
	m.mu.RUnlock()

	type finished struct {
		st *memStream
		at time.Time
	}
	var done []finished
	for _, st := range all {
		st.mu.Lock()
		if st.finished && !st.closed && st.head < len(st.offs) {
			done = append(done, finished{st, st.finishedAt})
		}
		st.mu.Unlock()
	}
	slices.SortFunc(done, func(a, b finished) int { return a.at.Compare(b.at) })
	for _, f := range done {
		if m.total.Load() <= low {
			break
		}
		f.st.mu.Lock()
		var freed int64
		for f.st.head < len(f.st.offs) {
			freed += f.st.dropOldest(&m.types)
		}
		f.st.compact()
		f.st.wake() // readers find out now, not at their next wake-up
		f.st.mu.Unlock()
		m.total.Add(-freed)
	}
	for m.total.Load() > low {
		if !m.trimLargestLive(all) {
			m.stuckAt.Store(m.total.Load()) // every live stream is down to its newest event
			return
		}
	}
	m.stuckAt.Store(0)
}

// trimLargestLive drops the oldest half (at least one record, never the
// newest) of the live stream that costs the most, and reports whether it
// found one to trim.
func (m *Memory) trimLargestLive(all []*memStream) bool {
	var largest *memStream
	var largestCost int64
	for _, st := range all {
		st.mu.Lock()
		if !st.finished && !st.closed && len(st.offs)-st.head > 1 {
			if c := st.cost(); c > largestCost {
				largest, largestCost = st, c
			}
		}
		st.mu.Unlock()
	}
	if largest == nil {
		return false
	}
	largest.mu.Lock()
	var freed int64
	n := len(largest.offs) - largest.head
	for range max(n/2, 1) {
		if len(largest.offs)-largest.head <= 1 {
			break // it may have changed since it was measured
		}
		freed += largest.dropOldest(&m.types)
	}
	largest.compact()
	largest.wake()
	largest.mu.Unlock()
	m.total.Add(-freed)
	return true
}
