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

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/run"
)

// limiter enforces the per-key limits of config.Limits: a request rate
// (token bucket) and a number of generations running at once. A key is
// the caller's tenant when API keys are configured, else the client's IP.
type limiter struct {
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	streams map[string]int
}

// maxBuckets bounds the per-IP buckets of an open server; past it the
// table starts over (a burst of new clients cannot grow memory).
const maxBuckets = 10000

func newLimiter() *limiter {
	return &limiter{buckets: map[string]*rate.Limiter{}, streams: map[string]int{}}
}

// allow takes one token from key's bucket, or says how long to wait.
func (l *limiter) allow(key string, lim config.Limits) (time.Duration, bool) {
	if lim.RatePerSecond <= 0 {
		return 0, true
	}
	l.mu.Lock()
	b, ok := l.buckets[key]
	if !ok || b.Limit() != rate.Limit(lim.RatePerSecond) || b.Burst() != lim.RateBurst {
		if len(l.buckets) >= maxBuckets {
			clear(l.buckets)
		}
		b = rate.NewLimiter(rate.Limit(lim.RatePerSecond), lim.RateBurst)
		l.buckets[key] = b
	}
	l.mu.Unlock()
	r := b.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return d, false
	}
	return 0, true
}

// acquireStream counts n model calls running at once (a question answered
// by n models side by side) against key's limit; release them when the
// generation ends (not when the request does: an answer keeps generating
// after its reader leaves).
func (l *limiter) acquireStream(key string, limit, n int) (release func(), ok bool) {
	if limit <= 0 {
		return func() {}, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.streams[key]+n > limit {
		return nil, false
	}
	l.streams[key] += n
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.streams[key] -= n; l.streams[key] <= 0 {
				delete(l.streams, key)
			}
		})
	}, true
}

// limitKey is who a limit applies to.
func (h *Handler) limitKey(c *gin.Context) string {
	if h.deps.Auth().Open() {
		return "ip:" + c.ClientIP()
	}
	return "tenant:" + tenant(c)
}

// rateLimit is the middleware of the request rate.
func (h *Handler) rateLimit(c *gin.Context) {
	wait, ok := h.limits.allow(h.limitKey(c), h.cfg().Limits)
	if ok {
		return
	}
	secs := int(math.Ceil(wait.Seconds()))
	c.Header("Retry-After", strconv.Itoa(secs))
	abort(c, http.StatusTooManyRequests, "rate_limited",
		fmt.Sprintf("Too many requests; try again in %d second(s).", secs))
}

// startLimited starts a generation under the caller's limit of answers
// generated at once, which counts model calls: a question answered by
// several models side by side takes one slot per model. The slots are
// held until the generation ends, not until the request does. When the
// limit is reached it calls refuse (each API answers in its own error
// shape) and returns ok=false.
func (h *Handler) startLimited(c *gin.Context, slots int, start func() (*run.Run, error), refuse func(msg string)) (r *run.Run, ok bool, err error) {
	limit := h.cfg().Limits.MaxConcurrentStreams
	slots = max(slots, 1)
	release, ok := h.limits.acquireStream(h.limitKey(c), limit, slots)
	if !ok {
		c.Header("Retry-After", "5")
		msg := fmt.Sprintf("This key already has %d answers being generated; wait for one to finish or stop one.", limit)
		if slots > 1 {
			msg = fmt.Sprintf("Answering with %d models at once counts as %d answers, and this key may have %d generated at once; "+
				"wait for an answer to finish, stop one, or ask fewer models.", slots, slots, limit)
		}
		refuse(msg)
		return nil, false, nil
	}
	if r, err = start(); err != nil {
		release()
		return nil, true, err
	}
	r.AfterDone(release) // the slots go with the run, not the request
	return r, true, nil
}
