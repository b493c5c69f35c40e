package run

import (
	"testing"
	"time"
)

// A save by count restarts the interval: the interval save comes Interval
// after the last save's snapshot, not on a clock of its own, so a stream
// saved by count every 0.9 s is not also saved by the interval each
// second.
func TestPartialSaveByCountRestartsTheInterval(t *testing.T) {
	s := &partialSaver{regs: map[*partialReg]struct{}{}}
	t0 := time.Unix(1_000_000, 0)
	r := &partialReg{ps: PartialSaves{EveryDeltas: 32, Interval: time.Second}, next: t0.Add(time.Second)}
	s.regs[r] = struct{}{}

	s.restartInterval(r, t0.Add(900*time.Millisecond)) // the count's save took its snapshot
	batch, next, ok := s.take(t0.Add(time.Second))
	if !ok || len(batch) != 0 || !next.Equal(t0.Add(1900*time.Millisecond)) {
		t.Fatalf("at the old interval time: %d due, next %v; want none due, next 1.9 s after start", len(batch), next.Sub(t0))
	}
	if batch, _, _ := s.take(t0.Add(1900 * time.Millisecond)); len(batch) != 1 {
		t.Fatalf("an interval after the last save: %d due, want the run", len(batch))
	}
}
