package cluster

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// redisClient connects to the test Redis or skips when none is configured.
func redisClient(t *testing.T) redis.UniversalClient {
	t.Helper()
	addr := os.Getenv("CHATPIPE_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("CHATPIPE_TEST_REDIS_ADDR not set: Redis tests skipped")
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis at %s (CHATPIPE_TEST_REDIS_ADDR) is not reachable: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func prefix(t *testing.T, c redis.UniversalClient) string {
	p := "chatpipe-test:" + uuid.NewString()[:8] + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := c.Keys(ctx, p+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
	return p
}

func newCoordinator(t *testing.T, c redis.UniversalClient, p string, ttl time.Duration, onLost func(context.Context, string)) *Coordinator {
	co := New(Options{Client: c, Prefix: p, LeaseTTL: ttl, OnLost: onLost})
	t.Cleanup(func() { _ = co.Close() })
	return co
}

func wait(t *testing.T, ch <-chan struct{}, what string, d time.Duration) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestStopRequestOnAnotherReplicaReachesTheGenerator(t *testing.T) {
	c := redisClient(t)
	p := prefix(t, c)
	a := newCoordinator(t, c, p, 3*time.Second, nil)
	b := newCoordinator(t, c, p, 3*time.Second, nil)
	stopped := make(chan struct{})
	lease, err := a.Acquire(t.Context(), "s1", func(bool) { close(stopped) })
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	// The subscription may not be up yet on a: the stop key covers that.
	found, err := b.RequestStop(t.Context(), "s1")
	if err != nil || !found {
		t.Fatalf("RequestStop = %v, %v", found, err)
	}
	wait(t, stopped, "the stop on the generating replica", 3*time.Second)
}

func TestAStopPubSubMissedIsFoundAtTheNextRenewal(t *testing.T) {
	c := redisClient(t)
	p := prefix(t, c)
	a := newCoordinator(t, c, p, 900*time.Millisecond, nil)
	stopped := make(chan struct{})
	lease, err := a.Acquire(t.Context(), "s1", func(bool) { close(stopped) })
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	c.Set(t.Context(), p+"stopreq:s1", "1", time.Minute) // as if the message was lost
	wait(t, stopped, "the stop found by renewal", 2*time.Second)
}

func TestReleasedGenerationIsNoLongerLive(t *testing.T) {
	c := redisClient(t)
	p := prefix(t, c)
	a := newCoordinator(t, c, p, time.Second, nil)
	lease, _ := a.Acquire(t.Context(), "s1", func(bool) {})
	lease.Release()
	lease.Release() // idempotent
	if found, err := a.RequestStop(t.Context(), "s1"); found || err != nil {
		t.Fatalf("RequestStop after release = %v, %v", found, err)
	}
	if n, _ := c.ZCard(t.Context(), p+"live").Result(); n != 0 {
		t.Fatalf("%d live entries after release", n)
	}
}

// A replica that dies (stops renewing without releasing) is noticed by
// exactly one of the others within about the lease TTL plus a reaper tick.
func TestALostGeneratorIsEndedByExactlyOneReplica(t *testing.T) {
	c := redisClient(t)
	p := prefix(t, c)
	const ttl = 600 * time.Millisecond
	var calls atomic.Int32
	var mu sync.Mutex
	var lostID string
	lost := make(chan struct{}, 3)
	onLost := func(_ context.Context, id string) {
		calls.Add(1)
		mu.Lock()
		lostID = id
		mu.Unlock()
		lost <- struct{}{}
	}
	dying := New(Options{Client: c, Prefix: p, LeaseTTL: ttl})
	if _, err := dying.Acquire(t.Context(), "s1", func(bool) {}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = dying.Close() // renewals stop; nothing is released: as after SIGKILL
	for range 2 {
		newCoordinator(t, c, p, ttl, onLost)
	}
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("the lost generation was never noticed")
	}
	if took := time.Since(start); took > 3*ttl {
		t.Errorf("noticed after %v; the bound is about %v", took, 2*ttl)
	}
	time.Sleep(2 * ttl) // give a duplicate claim the chance to show
	if n := calls.Load(); n != 1 {
		t.Fatalf("OnLost called %d times", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if lostID != "s1" {
		t.Fatalf("lost %q", lostID)
	}
}

// A generation declared lost (its lease taken away) stops itself.
func TestAGeneratorWhoseLeaseWasTakenStops(t *testing.T) {
	c := redisClient(t)
	p := prefix(t, c)
	a := newCoordinator(t, c, p, 600*time.Millisecond, nil)
	stopped := make(chan struct{})
	lease, _ := a.Acquire(t.Context(), "s1", func(lost bool) {
		if lost {
			close(stopped)
		}
	})
	defer lease.Release()
	c.Del(t.Context(), p+"lease:s1")
	wait(t, stopped, "the generator to stop", 2*time.Second)
}
