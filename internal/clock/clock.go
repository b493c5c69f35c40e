// Package clock stamps the rows the stores write.
package clock

import (
	"sync"
	"time"
)

// Clock hands out the process's time in UTC, truncated to microseconds
// (what both databases keep), and strictly increasing: two rows one
// process stamps are never a tie, so "newest first" has one answer. It is
// the process's clock, not the database server's; a store says why where
// that matters. The zero value is ready to use and safe for concurrent
// use.
type Clock struct {
	mu   sync.Mutex
	last time.Time
}

// Now returns the current time, or a microsecond after the last time it
// returned when the wall clock has not moved past that (or went back).
func (c *Clock) Now() time.Time {
	t := time.Now().UTC().Truncate(time.Microsecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !t.After(c.last) {
		t = c.last.Add(time.Microsecond)
	}
	c.last = t
	return t
}

// Advance makes every later Now come after t, as if the clock ran ahead
// to t; a t not after the last time returned changes nothing. Tests use it
// to stand for a process whose clock is fast.
func (c *Clock) Advance(t time.Time) {
	t = t.UTC().Truncate(time.Microsecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.last) {
		c.last = t
	}
}
