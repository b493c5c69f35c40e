package clock

import (
	"sync"
	"testing"
	"time"
)

func TestNowStrictlyIncreasesAtMicrosecondsInUTC(t *testing.T) {
	t.Parallel()
	var c Clock
	prev := c.Now()
	for range 10_000 { // many calls within one microsecond
		got := c.Now()
		if !got.After(prev) {
			t.Fatalf("Now = %v after %v, want later", got, prev)
		}
		if got.Location() != time.UTC || got.Nanosecond()%1000 != 0 {
			t.Fatalf("Now = %v, want UTC at microsecond precision", got)
		}
		prev = got
	}
}

func TestNowIsUniqueAcrossGoroutines(t *testing.T) {
	t.Parallel()
	var c Clock
	const goroutines, each = 8, 1000
	times := make([][]time.Time, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				times[g] = append(times[g], c.Now())
			}
		})
	}
	wg.Wait()
	seen := make(map[time.Time]bool, goroutines*each)
	for _, ts := range times {
		for _, tm := range ts {
			if seen[tm] {
				t.Fatalf("%v handed out twice", tm)
			}
			seen[tm] = true
		}
	}
}

func TestAdvanceRunsTheClockAheadButNeverBack(t *testing.T) {
	t.Parallel()
	var c Clock
	ahead := time.Now().Add(time.Hour) // local, with nanoseconds
	c.Advance(ahead)
	ahead = ahead.UTC().Truncate(time.Microsecond)
	if got := c.Now(); !got.Equal(ahead.Add(time.Microsecond)) {
		t.Errorf("Now after Advance = %v, want a microsecond after %v", got, ahead)
	}
	c.Advance(ahead.Add(-time.Minute))
	if got := c.Now(); !got.Equal(ahead.Add(2 * time.Microsecond)) {
		t.Errorf("Now after Advance to the past = %v, want the clock not to go back", got)
	}
}
