// Package redistest runs tests against the Redis named by
// CHATPIPE_TEST_REDIS_ADDR: stores under a key prefix of their own that
// is deleted when the test ends, and a TCP proxy a test can cut to play
// a Redis that goes away.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/chatpipe/chatpipe/internal/stream/redisstore"
)

// EnvAddr names the variable holding the test Redis address.
const EnvAddr = "CHATPIPE_TEST_REDIS_ADDR"

// Addr is the test Redis address. The test is skipped when EnvAddr is
// unset, and fails when it is set but Redis does not answer.
func Addr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(EnvAddr)
	if addr == "" {
		t.Skip("CHATPIPE_TEST_REDIS_ADDR not set: Redis tests skipped")
	}
	c := newClient(addr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("%s=%s but Redis does not answer: %v", EnvAddr, addr, err)
	}
	return addr
}

// Config is the Redis options of the test Redis with a key prefix unique to
// this test; every key under it is deleted when the test ends.
func Config(t testing.TB) redisstore.RedisOptions {
	t.Helper()
	addr := Addr(t)
	prefix := Prefix(t)
	t.Cleanup(func() { DeleteKeys(t, addr, prefix) })
	return redisstore.RedisOptions{
		Addr: addr, KeyPrefix: prefix,
		LiveTTL: 30 * time.Minute, FinishedTTL: 10 * time.Minute, QueueSize: 4096,
	}
}

// Open opens a store on the test Redis under a fresh prefix, closed (and
// its keys deleted) when the test ends.
func Open(t testing.TB, opts redisstore.Options) *redisstore.Store {
	t.Helper()
	return OpenConfig(t, Config(t), opts)
}

// OpenConfig opens a store with cfg, closed when the test ends.
func OpenConfig(t testing.TB, cfg redisstore.RedisOptions, opts redisstore.Options) *redisstore.Store {
	t.Helper()
	s, err := redisstore.Open(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("open redis store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Prefix is a key prefix unique to this test run: the test name (made
// glob-safe) and random bytes.
func Prefix(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, t.Name())
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "chatpipe-test:" + name + ":" + hex.EncodeToString(b[:]) + ":"
}

// DeleteKeys deletes every key under prefix.
func DeleteKeys(t testing.TB, addr, prefix string) {
	c := newClient(addr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Errorf("clean up keys %s*: %v", prefix, err)
		return
	}
	if len(keys) > 0 {
		if err := c.Del(ctx, keys...).Err(); err != nil {
			t.Errorf("clean up keys %s*: %v", prefix, err)
		}
	}
}

// Client is a plain client of the test Redis, closed when the test ends.
func Client(t testing.TB) *redis.Client {
	c := newClient(Addr(t))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}

// ClosedAddr is a local address nothing listens on: a Redis that is down.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// Proxy forwards TCP connections to Redis until it is cut: Cut drops every
// open connection and, until Restore, accepts new ones only to close them,
// which is what clients see of a Redis that restarts or goes away.
type Proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

// NewProxy starts a proxy to target on a free local port; it stops when
// the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's address, to give to the client under test.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut drops every connection and refuses service until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore forwards new connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer p.drop(c)
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		_ = up.Close()
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	defer p.drop(up)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Either side ending ends both.
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

func (p *Proxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
}
