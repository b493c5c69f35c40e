// Package cluster lets several chatpipe replicas share their live
// generations through Redis: a stop request that lands on any replica
// reaches the one generating, and a generation whose replica died is
// noticed within a bounded time and ended on its behalf.
//
// Each live generation holds a lease (a key with a TTL) that its replica
// renews. A sorted set indexes live generations by lease expiry, so every
// replica's reaper can find expired ones without scanning keys; removing a
// member from the set is the claim, so exactly one replica ends a lost
// generation. Stops travel by pub/sub for speed and by a key the
// generator checks at each renewal, so a stop survives a missed message.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Options configure a Coordinator.
type Options struct {
	Client    redis.UniversalClient
	Prefix    string        // key prefix, e.g. "chatpipe:"
	LeaseTTL  time.Duration // a lease not renewed for this long is lost
	ReplicaID string        // "" = a random id
	Logger    *zap.Logger
	// OnLost ends a generation whose replica stopped renewing its lease.
	// It is called by exactly one replica per lost generation.
	OnLost func(ctx context.Context, streamID string)
}

// Coordinator is one replica's view of the cluster's live generations.
type Coordinator struct {
	opts Options
	log  *zap.Logger

	mu        sync.Mutex
	local     map[string]*Lease // generations this replica runs
	closed    bool
	downUntil time.Time // after a failed acquire, skip Redis for a moment

	stop chan struct{}
	wg   sync.WaitGroup
}

// Lease is a live generation this replica runs. Release it when the
// generation has finished its stream.
type Lease struct {
	c        *Coordinator
	streamID string
	onStop   func(lost bool)
	once     sync.Once
	done     chan struct{}
	stopOnce sync.Once
	waits    decisionWaits // tool calls waiting for a user's decision (approvals)
}

// Errors of Acquire.
var (
	ErrClosed      = errors.New("cluster coordinator closed")
	ErrUnavailable = errors.New("cluster: Redis unavailable")
)

// downFor is how long Acquire skips Redis after failing to reach it, so
// that new answers are not each delayed by a timeout while Redis is away.
const downFor = 2 * time.Second

// New starts a coordinator: its stop subscription and its reaper.
func New(opts Options) *Coordinator {
	if opts.ReplicaID == "" {
		opts.ReplicaID = uuid.NewString()
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	c := &Coordinator{opts: opts, log: opts.Logger.With(zap.String("replica", opts.ReplicaID)),
		local: map[string]*Lease{}, stop: make(chan struct{})}
	c.wg.Add(2)
	go c.listen()
	go c.reap()
	return c
}

func (c *Coordinator) leaseKey(id string) string { return c.opts.Prefix + "lease:" + id }
func (c *Coordinator) stopKey(id string) string  { return c.opts.Prefix + "stopreq:" + id }
func (c *Coordinator) liveKey() string           { return c.opts.Prefix + "live" }
func (c *Coordinator) stopChannel() string       { return c.opts.Prefix + "stop" }

// ReplicaID names this replica.
func (c *Coordinator) ReplicaID() string { return c.opts.ReplicaID }

// Acquire registers a generation this replica runs; onStop is called
// (once) when any replica asks to stop it, or with lost=true when another
// replica declared it lost (its lease expired) and already ended its
// stream. The lease is renewed until Release. An error means Redis is
// unreachable: the generation should go on without cross-replica stop and
// liveness.
func (c *Coordinator) Acquire(ctx context.Context, streamID string, onStop func(lost bool)) (*Lease, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if time.Now().Before(c.downUntil) {
		c.mu.Unlock()
		return nil, ErrUnavailable
	}
	c.mu.Unlock()
	ttl := c.opts.LeaseTTL
	_, err := c.opts.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, c.leaseKey(streamID), c.opts.ReplicaID, ttl)
		p.ZAdd(ctx, c.liveKey(), redis.Z{Score: float64(time.Now().Add(ttl).UnixMilli()), Member: streamID})
		return nil
	})
	if err != nil {
		c.mu.Lock()
		c.downUntil = time.Now().Add(downFor)
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: acquire lease of %s: %v", ErrUnavailable, streamID, err)
	}
	l := &Lease{c: c, streamID: streamID, onStop: onStop, done: make(chan struct{})}
	c.mu.Lock()
	c.local[streamID] = l
	c.mu.Unlock()
	c.wg.Add(1)
	go l.renew()
	return l, nil
}

// renewScript extends a lease only while this replica still holds it.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
  return redis.call('EXISTS', KEYS[3]) + 1
end
return 0`)

// renew keeps the lease alive at a third of its TTL and looks for a stop
// request that pub/sub may have missed.
func (l *Lease) renew() {
	c := l.c
	defer c.wg.Done()
	t := time.NewTicker(c.opts.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-c.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.LeaseTTL/3)
		ttl := c.opts.LeaseTTL
		res, err := renewScript.Run(ctx, c.opts.Client,
			[]string{c.leaseKey(l.streamID), c.liveKey(), c.stopKey(l.streamID)},
			c.opts.ReplicaID, ttl.Milliseconds(), time.Now().Add(ttl).UnixMilli(), l.streamID).Int()
		cancel()
		switch {
		case err != nil:
			c.log.Warn("renewing a generation lease failed", zap.String("stream_id", l.streamID), zap.Error(err))
		case res == 0:
			// Another replica declared this generation lost and ended its
			// stream; going on would only bill tokens nobody can see.
			c.log.Warn("generation lease lost; stopping", zap.String("stream_id", l.streamID))
			l.fireStop(true)
			return
		case res == 2:
			l.fireStop(false)
		}
		l.pollDecisions()
	}
}

func (l *Lease) fireStop(lost bool) { l.stopOnce.Do(func() { l.onStop(lost) }) }

// Release ends the lease of a finished generation.
func (l *Lease) Release() {
	l.once.Do(func() {
		close(l.done)
		c := l.c
		c.mu.Lock()
		delete(c.local, l.streamID)
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := releaseScript.Run(ctx, c.opts.Client,
			[]string{c.leaseKey(l.streamID), c.liveKey(), c.stopKey(l.streamID)}, c.opts.ReplicaID, l.streamID).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			c.log.Warn("releasing a generation lease failed; it expires by itself", zap.String("stream_id", l.streamID), zap.Error(err))
		}
	})
}

var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[2])
end
redis.call('DEL', KEYS[3])
return 1`)

// RequestStop asks whichever replica generates streamID to stop it. It
// reports whether a live generation was found.
func (c *Coordinator) RequestStop(ctx context.Context, streamID string) (bool, error) {
	c.mu.Lock()
	l, ok := c.local[streamID]
	c.mu.Unlock()
	if ok {
		l.fireStop(false)
		return true, nil
	}
	n, err := c.opts.Client.Exists(ctx, c.leaseKey(streamID)).Result()
	if err != nil {
		return false, fmt.Errorf("cluster: find generation %s: %w", streamID, err)
	}
	if n == 0 {
		return false, nil
	}
	_, err = c.opts.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, c.stopKey(streamID), "1", 2*c.opts.LeaseTTL)
		p.Publish(ctx, c.stopChannel(), streamID)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("cluster: request stop of %s: %w", streamID, err)
	}
	return true, nil
}

// listen receives stop requests, and decisions on tool calls, for
// generations this replica runs. go-redis resubscribes by itself after a
// lost connection; a stop or decision sent meanwhile is still found
// through its key at the next renewal.
func (c *Coordinator) listen() {
	defer c.wg.Done()
	sub := c.opts.Client.Subscribe(context.Background(), c.stopChannel(), c.decisionChannel())
	defer sub.Close()
	ch := sub.Channel()
	for {
		select {
		case <-c.stop:
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			if msg.Channel == c.decisionChannel() {
				c.deliverDecision(msg.Payload)
				continue
			}
			c.mu.Lock()
			l, found := c.local[msg.Payload]
			c.mu.Unlock()
			if found {
				l.fireStop(false)
			}
		}
	}
}

// reap ends generations whose lease expired, claiming each by removing it
// from the live set so that exactly one replica handles it.
func (c *Coordinator) reap() {
	defer c.wg.Done()
	t := time.NewTicker(max(c.opts.LeaseTTL/2, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.reapOnce()
	}
}

func (c *Coordinator) reapOnce() {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.LeaseTTL)
	defer cancel()
	ids, err := c.opts.Client.ZRangeByScore(ctx, c.liveKey(), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(time.Now().UnixMilli(), 10), Count: 100,
	}).Result()
	if err != nil {
		return // Redis away; the next tick tries again
	}
	for _, id := range ids {
		if n, err := c.opts.Client.ZRem(ctx, c.liveKey(), id).Result(); err != nil || n == 0 {
			continue // another replica claimed it
		}
		if alive, err := c.opts.Client.Exists(ctx, c.leaseKey(id)).Result(); err != nil || alive == 1 {
			// Renewed meanwhile (or unknown): put it back for its owner.
			c.opts.Client.ZAdd(ctx, c.liveKey(), redis.Z{Score: float64(time.Now().Add(c.opts.LeaseTTL).UnixMilli()), Member: id})
			continue
		}
		c.log.Warn("a generation's replica stopped renewing its lease; ending it", zap.String("stream_id", id))
		if c.opts.OnLost != nil {
			c.opts.OnLost(ctx, id)
		}
	}
}

// Close stops the coordinator's goroutines. Leases still held expire by
// themselves (their generations are being stopped by the caller).
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	close(c.stop)
	c.wg.Wait()
	return nil
}
