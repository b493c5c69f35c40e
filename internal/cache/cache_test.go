package cache_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/internal/cache"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a fake clock tests move forward.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// backend is a store under test and a way to let a ttl pass.
type backend struct {
	store cache.Store
	// expire returns once a value stored with ttl has expired.
	expire func(t *testing.T, ttl time.Duration)
}

func memoryBackend(t *testing.T) backend {
	c := &clock{now: time.Unix(1_700_000_000, 0)}
	m := cache.NewMemory(cache.MemoryOptions{MaxBytes: 1 << 20, Now: c.Now})
	return backend{store: m, expire: func(_ *testing.T, ttl time.Duration) { c.Advance(ttl) }}
}

// redisAddr is the Redis of the Redis tests: CHATPIPE_TEST_REDIS_ADDR,
// which must answer when set; unset skips them.
func redisAddr(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("CHATPIPE_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("CHATPIPE_TEST_REDIS_ADDR not set: Redis tests skipped")
	}
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("Redis at %s (CHATPIPE_TEST_REDIS_ADDR) is not reachable: %v", addr, err)
	}
	return addr
}

// redisBackend is a Redis store whose keys live under a prefix of the
// test's own, deleted at the end.
func redisBackend(t *testing.T) (backend, *redis.Client, string) {
	addr := redisAddr(t)
	prefix := "chatpipe-test:" + uuid.NewString() + ":"
	store := cache.NewRedis(cache.RedisOptions{Addr: addr, KeyPrefix: prefix})
	admin := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := admin.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			admin.Del(ctx, keys...)
		}
		_ = admin.Close()
	})
	return backend{store: store, expire: func(t *testing.T, ttl time.Duration) {
		// Redis expires on its own clock: wait for it, bounded.
		time.Sleep(ttl)
	}}, admin, prefix
}

// TestStores runs one suite against every backend.
func TestStores(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) backend{
		"memory": memoryBackend,
		"redis": func(t *testing.T) backend {
			b, _, _ := redisBackend(t)
			return b
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Run("MissThenHitThenReplace", func(t *testing.T) {
				b := open(t)
				defer b.store.Close()
				ctx := t.Context()
				if _, ok, err := b.store.Get(ctx, "k"); ok || err != nil {
					t.Fatalf("empty store: ok=%v err=%v", ok, err)
				}
				buf := []byte("first")
				if err := b.store.Set(ctx, "k", buf, time.Minute); err != nil {
					t.Fatal(err)
				}
				copy(buf, "XXXXX") // the store keeps its own copy
				if v, ok, err := b.store.Get(ctx, "k"); !ok || err != nil || string(v) != "first" {
					t.Fatalf("Get = %q %v %v", v, ok, err)
				}
				if err := b.store.Set(ctx, "k", []byte("second"), time.Minute); err != nil {
					t.Fatal(err)
				}
				if v, _, _ := b.store.Get(ctx, "k"); string(v) != "second" {
					t.Fatalf("after replace: %q", v)
				}
			})
			t.Run("ValuesExpireAfterTheirTTL", func(t *testing.T) {
				b := open(t)
				defer b.store.Close()
				ctx := t.Context()
				const ttl = 300 * time.Millisecond
				if err := b.store.Set(ctx, "short", []byte("v"), ttl); err != nil {
					t.Fatal(err)
				}
				if err := b.store.Set(ctx, "long", []byte("v"), time.Hour); err != nil {
					t.Fatal(err)
				}
				if _, ok, _ := b.store.Get(ctx, "short"); !ok {
					t.Fatal("value gone before its ttl")
				}
				b.expire(t, ttl+50*time.Millisecond)
				if _, ok, _ := b.store.Get(ctx, "short"); ok {
					t.Fatal("value served after its ttl")
				}
				if _, ok, _ := b.store.Get(ctx, "long"); !ok {
					t.Fatal("a value with time left expired too")
				}
			})
		})
	}
}

// The memory store drops the least recently used entries to stay within
// its byte budget, and refuses what could never fit.
func TestMemoryEvictsLeastRecentlyUsedWithinBudget(t *testing.T) {
	ctx := t.Context()
	value := []byte(strings.Repeat("v", 874)) // with a 2-byte key and the overhead: 1,004 bytes
	m := cache.NewMemory(cache.MemoryOptions{MaxBytes: 3 * 1004})
	for i := range 3 {
		if err := m.Set(ctx, fmt.Sprintf("k%d", i), value, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if m.Len() != 3 || m.Bytes() != 3*1004 {
		t.Fatalf("len %d bytes %d", m.Len(), m.Bytes())
	}
	_, _, _ = m.Get(ctx, "k0") // k1 is now the least recently used
	if err := m.Set(ctx, "k3", value, time.Hour); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{"k0": true, "k1": false, "k2": true, "k3": true} {
		if _, ok, _ := m.Get(ctx, key); ok != want {
			t.Errorf("%s kept = %v, want %v", key, ok, want)
		}
	}
	if m.Bytes() > 3*1004 {
		t.Errorf("over budget: %d", m.Bytes())
	}
	if err := m.Set(ctx, "huge", make([]byte, 4000), time.Hour); !errors.Is(err, cache.ErrTooLarge) {
		t.Errorf("a value over the whole budget: %v", err)
	}
}

// The Redis store writes under <key_prefix>cache: and nowhere else.
func TestRedisKeysLiveUnderThePrefix(t *testing.T) {
	b, admin, prefix := redisBackend(t)
	defer b.store.Close()
	if err := b.store.Set(t.Context(), "response_cache:abc", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	keys, err := admin.Keys(t.Context(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != prefix+"cache:response_cache:abc" {
		t.Fatalf("keys = %v", keys)
	}
	if ttl := admin.PTTL(t.Context(), keys[0]).Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("ttl = %v", ttl)
	}
}

// A Redis that is away makes calls fail fast with an error the plugin
// treats as a miss.
func TestRedisAwayFailsFast(t *testing.T) {
	store := cache.NewRedis(cache.RedisOptions{Addr: "127.0.0.1:1", KeyPrefix: "x:"})
	defer store.Close()
	start := time.Now()
	if _, ok, err := store.Get(t.Context(), "k"); ok || err == nil {
		t.Fatalf("Get = %v %v", ok, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestOpenChoosesTheStoreAndAppliesTheBudget(t *testing.T) {
	open := func(o cache.Options) cache.Store {
		t.Helper()
		s, err := cache.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open(cache.Options{Store: "memory", MaxBytes: 2048})
	m, ok := s.(*cache.Memory)
	if !ok {
		t.Fatalf("memory opened %T", s)
	}
	if err := m.Set(t.Context(), "k", make([]byte, 4096), time.Hour); !errors.Is(err, cache.ErrTooLarge) {
		t.Errorf("budget of 2048 bytes not applied: %v", err)
	}
	_ = s.Close()

	s = open(cache.Options{Store: "memory"})
	if err := s.Set(t.Context(), "k", make([]byte, 4096), time.Hour); err != nil {
		t.Errorf("MaxBytes 0 is not the default budget: %v", err)
	}
	_ = s.Close()

	if _, err := cache.Open(cache.Options{Store: "kafka"}); err == nil || err.Error() != `stream_store: unknown stream store "kafka" (known: memory, redis)` {
		t.Errorf("an unknown stream store: %v", err)
	}

	s = open(cache.Options{Store: "redis", Redis: cache.RedisOptions{Addr: "127.0.0.1:1"}, MaxBytes: 2048})
	if _, ok := s.(*cache.Redis); !ok {
		t.Fatalf("redis opened %T", s)
	}
	_ = s.Close()
}
