package handler

import (
	"net/http"
	"time"
)

// writeDeadline keeps a long-lived response's write deadline about the
// write timeout ahead of every write, so a client that stops reading is
// cut after the write timeout however long the stream lasts. Setting a
// deadline costs a runtime timer update (about 4% of a streamed frame's
// CPU when done per frame), so it is moved only once it has fallen a
// thirty-second of the timeout behind: a write that stalls is still cut
// between 31/32 of the timeout and the timeout after it began.
type writeDeadline struct {
	rc      *http.ResponseController
	timeout time.Duration // 0 = no deadline of our own
	set     time.Time     // when the deadline was last moved; zero = never
}

// renew moves the deadline to timeout from now, unless it was moved less
// than timeout/32 ago. Call it before each write.
func (d *writeDeadline) renew() {
	if d.timeout <= 0 {
		return
	}
	now := time.Now()
	if !d.set.IsZero() && now.Sub(d.set) < d.timeout/32 {
		return
	}
	d.set = now
	_ = d.rc.SetWriteDeadline(now.Add(d.timeout))
}
