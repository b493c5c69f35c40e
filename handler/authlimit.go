package handler

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"
)

// authFailures limits requests with a wrong or missing API key per client
// IP (limits.failed_auth_per_minute), so keys cannot be guessed at the
// speed of the network. Once an IP has used up its budget, every request
// from it is refused with 429 before its key is even looked at — a correct
// guess must not get through — until the budget refills.
type authFailures struct {
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newAuthFailures() *authFailures { return &authFailures{buckets: map[string]*rate.Limiter{}} }

// bucket returns ip's bucket for perMinute failures a minute, replacing it
// when the limit changed in a reload. The table is bounded like the
// request-rate one.
func (a *authFailures) bucket(ip string, perMinute int) *rate.Limiter {
	a.mu.Lock()
	defer a.mu.Unlock()
	limit := rate.Limit(float64(perMinute) / 60)
	b, ok := a.buckets[ip]
	if !ok || b.Limit() != limit || b.Burst() != perMinute {
		if len(a.buckets) >= maxBuckets {
			clear(a.buckets)
		}
		b = rate.NewLimiter(limit, perMinute)
		a.buckets[ip] = b
	}
	return b
}

// wait is how long ip must wait before its key is checked again; 0 when
// it may try now.
func (a *authFailures) wait(ip string, perMinute int) time.Duration {
	if perMinute <= 0 {
		return 0
	}
	b := a.bucket(ip, perMinute)
	tokens := b.Tokens()
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(b.Limit()) * float64(time.Second))
}

// failed counts one failed authentication of ip.
func (a *authFailures) failed(ip string, perMinute int) {
	if perMinute > 0 {
		a.bucket(ip, perMinute).Allow()
	}
}

// authThrottled answers 429 (through refuse, in the API's own error
// shape) when the client has failed authentication too often, and
// reports whether it did.
func (h *Handler) authThrottled(c *gin.Context, refuse func(msg string)) bool {
	wait := h.authFails.wait(c.ClientIP(), h.cfg().Limits.FailedAuthPerMinute)
	if wait <= 0 {
		return false
	}
	secs := max(1, int(math.Ceil(wait.Seconds())))
	c.Header("Retry-After", strconv.Itoa(secs))
	refuse(fmt.Sprintf("Too many requests with a wrong API key from this address; try again in %d second(s).", secs))
	closeAfterReply(c)
	return true
}

// authFailed counts a refused key and makes the connection close after
// the 401 without reading the rest of the request body: a client that is
// not allowed in gets no more of the server's time.
func (h *Handler) authFailed(c *gin.Context) {
	h.authFails.failed(c.ClientIP(), h.cfg().Limits.FailedAuthPerMinute)
	closeAfterReply(c)
}

// closeAfterReply closes the connection once the response is written and
// stops reading the request: any read of the body from here on fails at
// once, so net/http neither waits for the rest of a slow body before
// answering nor after.
func closeAfterReply(c *gin.Context) {
	c.Header("Connection", "close")
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now())
}
