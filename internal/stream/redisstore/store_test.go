package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/internal/stream"
	"github.com/chatpipe/chatpipe/internal/stream/redisstore"
	"github.com/chatpipe/chatpipe/internal/stream/redisstore/redistest"
	"github.com/chatpipe/chatpipe/internal/stream/streamtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRedisConformance(t *testing.T) {
	redistest.Addr(t) // skip (or fail) once, not in every case
	streamtest.Run(t, func(t *testing.T) stream.Store {
		return redistest.Open(t, redisstore.Options{MaxEvents: streamtest.MaxEvents})
	})
}

func mustFlush(t *testing.T, s *redisstore.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

func appendRange(t *testing.T, s stream.Store, id string, from, to int64) {
	t.Helper()
	for seq := from; seq <= to; seq++ {
		if err := s.Append(context.Background(), id, streamtest.Rec(seq)); err != nil {
			t.Fatalf("append %d: %v", seq, err)
		}
	}
}

func readAll(t *testing.T, s stream.Store, id string, after int64) []stream.Record {
	t.Helper()
	sub, err := s.Subscribe(context.Background(), id, after)
	if err != nil {
		t.Fatalf("subscribe %s after %d: %v", id, after, err)
	}
	defer sub.Close()
	recs, err := streamtest.ReadAll(sub)
	if err != nil {
		t.Fatalf("read %s after %d: %v", id, after, err)
	}
	return recs
}

func TestReplayOf5000EventStreamHasEveryEvent(t *testing.T) {
	t.Parallel()
	cfg := redistest.Config(t)
	cfg.QueueSize = 8192
	s := redistest.OpenConfig(t, cfg, redisstore.Options{})
	ctx := context.Background()
	_ = s.Create(ctx, "s")
	appendRange(t, s, "s", 1, 5000)
	_ = s.Finish(ctx, "s")
	mustFlush(t, s)
	start := time.Now()
	recs := readAll(t, s, "s", 0)
	t.Logf("replayed %d events in %v", len(recs), time.Since(start))
	if err := streamtest.CheckRange(recs, 1, 5000); err != nil {
		t.Fatal(err)
	}
}

func TestMaxLenTrimsTheStreamAndOlderCursorsExpire(t *testing.T) {
	t.Parallel()
	s := redistest.Open(t, redisstore.Options{MaxEvents: 100})
	ctx := context.Background()
	_ = s.Create(ctx, "s")
	appendRange(t, s, "s", 1, 1000)
	_ = s.Finish(ctx, "s")
	mustFlush(t, s)

	n, err := s.Client().XLen(ctx, s.Prefix()+"stream:s").Result()
	if err != nil {
		t.Fatal(err)
	}
	// MAXLEN ~ trims whole nodes (100 entries each by default): at least
	// 100 are kept, and about that many.
	if n < 100 || n > 300 {
		t.Fatalf("stream holds %d entries, want about 100", n)
	}
	if _, err := s.Subscribe(ctx, "s", 0); !errors.Is(err, stream.ErrExpired) {
		t.Fatalf("subscribe before the window: err = %v, want ErrExpired", err)
	}
	if err := streamtest.CheckRange(readAll(t, s, "s", 900), 901, 1000); err != nil {
		t.Fatal(err)
	}
}

// countingHook counts the commands the store sends, by name.
type countingHook struct {
	mu        sync.Mutex
	byName    map[string]int
	cmds      int
	pipelines int
}

func newCountingHook() *countingHook { return &countingHook{byName: make(map[string]int)} }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		h.pipelines++
		h.mu.Unlock()
		for _, c := range cmds {
			h.count(c)
		}
		return next(ctx, cmds)
	}
}

func (h *countingHook) count(cmd redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cmds++
	h.byName[strings.ToLower(cmd.Name())]++
}

func (h *countingHook) get(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byName[name]
}

func TestTTLsAreLiveWhileGrowingAndFinishedAfterFinish(t *testing.T) {
	t.Parallel()
	cfg := redistest.Config(t)
	cfg.LiveTTL, cfg.FinishedTTL = 30*time.Minute, 10*time.Minute
	s := redistest.OpenConfig(t, cfg, redisstore.Options{})
	hook := newCountingHook()
	s.Client().AddHook(hook)
	ctx := context.Background()
	key, meta := s.Prefix()+"stream:s", s.Prefix()+"stream:s:meta"
	ttls := func() (time.Duration, time.Duration) {
		t.Helper()
		a, err1 := s.Client().TTL(ctx, key).Result()
		b, err2 := s.Client().TTL(ctx, meta).Result()
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		return a, b
	}

	_ = s.Create(ctx, "s")
	// One event per write, as at a real token rate.
	for seq := int64(1); seq <= 50; seq++ {
		appendRange(t, s, "s", seq, seq)
		mustFlush(t, s)
	}
	k, m := ttls()
	if k <= 10*time.Minute || k > 30*time.Minute || m <= 10*time.Minute || m > 30*time.Minute {
		t.Fatalf("live TTLs: stream %v, meta %v; want live_ttl (30m)", k, m)
	}
	// Renewed as the stream grows, not per event: the meta's expiry at
	// Create, then stream and meta once.
	if n := hook.get("expire"); n != 3 {
		t.Errorf("%d EXPIREs for 50 events, want 3", n)
	}
	if n := hook.get("xadd"); n != 50 {
		t.Errorf("%d XADDs for 50 events, want 50", n)
	}

	_ = s.Finish(ctx, "s")
	mustFlush(t, s)
	k, m = ttls()
	if k <= 0 || k > 10*time.Minute || m <= 0 || m > 10*time.Minute {
		t.Fatalf("finished TTLs: stream %v, meta %v; want finished_ttl (10m)", k, m)
	}
}

func TestRedisGoingAwayMarksStreamBrokenAndNewStreamsWorkWhenItReturns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := redistest.Config(t)
	proxy := redistest.NewProxy(t, cfg.Addr)
	cfg.Addr, cfg.QueueSize = proxy.Addr(), 64
	s := redistest.OpenConfig(t, cfg, redisstore.Options{ReadBlock: time.Second})
	direct := redistest.Client(t)

	_ = s.Create(ctx, "s")
	appendRange(t, s, "s", 1, 10)
	mustFlush(t, s)
	tail, err := s.Subscribe(ctx, "s", 0) // a reader tailing through Redis
	if err != nil {
		t.Fatal(err)
	}
	defer tail.Close()
	if recs, _, _ := tail.Fetch(nil); len(recs) != 10 {
		t.Fatalf("tail replay = %d records, want 10", len(recs))
	}

	proxy.Cut()
	if _, err := s.Subscribe(ctx, "s", 10); !errors.Is(err, stream.ErrUnavailable) {
		t.Errorf("resume while Redis is away: err = %v, want ErrUnavailable", err)
	}
	const last = 2000 // far more than the queue holds
	appended := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		for seq := int64(11); seq <= last; seq++ {
			err := s.Append(ctx, "s", streamtest.Rec(seq))
			if err != nil && !errors.Is(err, redisstore.ErrBroken) {
				t.Errorf("append %d: %v", seq, err)
			}
		}
		_ = s.Finish(ctx, "s")
		appended <- time.Since(start)
	}()
	select {
	case d := <-appended:
		t.Logf("%d appends with Redis away took %v", last-10, d)
	case <-time.After(10 * time.Second):
		t.Fatal("Append blocked while Redis was away")
	}

	proxy.Restore()
	// The broken flag reaches Redis once it is back (Flush fails until then).
	wait, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		err := s.Flush(wait)
		if err == nil {
			break
		}
		if wait.Err() != nil {
			t.Fatalf("broken flag never written: %v", err)
		}
		select {
		case <-wait.Done():
		case <-time.After(100 * time.Millisecond): // Redis is coming back; retry the write
		}
	}

	for _, after := range []int64{0, 10, 500} {
		if _, err := s.Subscribe(ctx, "s", after); !errors.Is(err, stream.ErrExpired) {
			t.Errorf("resume after %d: err = %v, want ErrExpired", after, err)
		}
	}
	if recs, err := streamtest.ReadAll(tail); !errors.Is(err, stream.ErrExpired) {
		t.Errorf("tailing reader: %d more records, err = %v; want ErrExpired", len(recs), err)
	}
	prefix, err := direct.XRange(ctx, s.Prefix()+"stream:s", "1-0", "10-0").Result()
	if err != nil || len(prefix) != 10 {
		t.Errorf("written prefix: %d entries, err %v; want 10 kept", len(prefix), err)
	}
	meta, _ := direct.HGetAll(ctx, s.Prefix()+"stream:s:meta").Result()
	if meta["broken"] != "1" || meta["finished"] != "1" {
		t.Errorf("meta = %v, want broken and finished", meta)
	}

	// The store recovered: a new stream works end to end.
	_ = s.Create(ctx, "t")
	appendRange(t, s, "t", 1, 50) // within the queue
	_ = s.Finish(ctx, "t")
	mustFlush(t, s)
	if err := streamtest.CheckRange(readAll(t, s, "t", 0), 1, 50); err != nil {
		t.Fatal(err)
	}
}

func TestAppendDirectWritesTerminalEventsOnceAndEndsReaders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := redistest.Config(t)
	gen := redistest.OpenConfig(t, cfg, redisstore.Options{})   // the generating replica
	other := redistest.OpenConfig(t, cfg, redisstore.Options{}) // a replica that takes over its end
	_ = gen.Create(ctx, "s")
	appendRange(t, gen, "s", 1, 3)
	mustFlush(t, gen)

	if ok, err := other.Exists(ctx, "s"); !ok || err != nil {
		t.Fatalf("exists = %v, %v; want true", ok, err)
	}
	if ok, err := other.Exists(ctx, "nope"); ok || err != nil {
		t.Fatalf("exists(nope) = %v, %v; want false", ok, err)
	}
	if last, err := other.LastSeq(ctx, "s"); last != 3 || err != nil {
		t.Fatalf("last seq = %d, %v; want 3", last, err)
	}
	for _, seq := range []int64{2, 3} {
		if err := other.AppendDirect(ctx, "s", streamtest.Rec(seq)); !errors.Is(err, redisstore.ErrConflict) {
			t.Fatalf("append direct of written seq %d: err = %v, want ErrConflict", seq, err)
		}
	}
	if err := other.AppendDirect(ctx, "nope", streamtest.Rec(1)); !errors.Is(err, stream.ErrNotFound) {
		t.Fatalf("append direct to unknown stream: err = %v, want ErrNotFound", err)
	}

	sub, err := other.Subscribe(ctx, "s", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	finished := stream.Record{Seq: 5, Type: "stream.finished", Data: []byte(`{"seq":5,"type":"stream.finished"}`)}
	if err := other.AppendDirect(ctx, "s", streamtest.Rec(4)); err != nil {
		t.Fatal(err)
	}
	if err := other.AppendDirect(ctx, "s", finished); err != nil {
		t.Fatal(err)
	}
	recs, err := streamtest.ReadAll(sub) // ends at the stream.finished record
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[3].Seq != 5 || recs[3].Type != "stream.finished" {
		t.Fatalf("reader got %d records ending %+v", len(recs), recs[len(recs)-1])
	}
	if err := other.AppendDirect(ctx, "s", streamtest.Rec(6)); !errors.Is(err, redisstore.ErrConflict) {
		t.Fatalf("append direct after finish: err = %v, want ErrConflict", err)
	}
	if ttl := other.Client().TTL(ctx, other.Prefix()+"stream:s:meta").Val(); ttl <= 0 || ttl > cfg.FinishedTTL {
		t.Fatalf("meta TTL after a direct finish = %v, want at most finished_ttl", ttl)
	}
	if recs := readAll(t, gen, "s", 3); len(recs) != 2 {
		t.Fatalf("replay after 3 = %d records, want 2", len(recs))
	}
}

// The generator was only slow: its own write of a seq another replica
// already wrote fails, and the stream is marked broken rather than mixed.
func TestWriteConflictMarksStreamBroken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := redistest.Config(t)
	gen := redistest.OpenConfig(t, cfg, redisstore.Options{})
	other := redistest.OpenConfig(t, cfg, redisstore.Options{})
	_ = gen.Create(ctx, "s")
	appendRange(t, gen, "s", 1, 3)
	mustFlush(t, gen)
	if err := other.AppendDirect(ctx, "s", streamtest.Rec(4)); err != nil {
		t.Fatal(err)
	}
	appendRange(t, gen, "s", 4, 4)
	mustFlush(t, gen)
	if _, err := other.Subscribe(ctx, "s", 0); !errors.Is(err, stream.ErrExpired) {
		t.Fatalf("subscribe to a broken stream: err = %v, want ErrExpired", err)
	}
	if err := gen.Append(ctx, "s", streamtest.Rec(5)); !errors.Is(err, redisstore.ErrBroken) {
		t.Fatalf("append to a broken stream: err = %v, want ErrBroken", err)
	}
}

func TestCloseEndsTailingReadersPromptly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := redisstore.Open(ctx, redistest.Config(t), redisstore.Options{ReadBlock: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Create(ctx, "s")
	mustFlush(t, s)
	sub, err := s.Subscribe(ctx, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("close: %v", err)
		}
	case <-time.After(4 * time.Second): // less than one block time
		t.Fatal("Close waited for a blocking read to time out")
	}
	if _, _, err := sub.Fetch(nil); !errors.Is(err, stream.ErrClosed) {
		t.Fatalf("fetch after close: err = %v, want ErrClosed", err)
	}
}

func TestMarkBrokenEndsTailingReadersWithAResync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := redistest.Config(t)
	gen := redistest.OpenConfig(t, cfg, redisstore.Options{})
	other := redistest.OpenConfig(t, cfg, redisstore.Options{})
	_ = gen.Create(ctx, "s")
	appendRange(t, gen, "s", 1, 3)
	mustFlush(t, gen)
	sub, err := other.Subscribe(ctx, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := other.MarkBroken(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := streamtest.ReadAll(sub); !errors.Is(err, stream.ErrExpired) {
		t.Fatalf("tailing reader: err = %v, want ErrExpired", err)
	}
	if _, err := other.Subscribe(ctx, "s", 3); !errors.Is(err, stream.ErrExpired) {
		t.Fatalf("resume after MarkBroken: err = %v, want ErrExpired", err)
	}
}

// A stream's id reaches clients (in stream.started) as soon as Create
// returns, and a client may resume on another replica at once: that
// replica must find the stream live in Redis, not unknown (which the
// handler answers with resync_required). Many streams, as the window
// between Create and the write reaching Redis is short.
func TestStreamCreatedOnOneReplicaIsLiveOnAnotherAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := redistest.Config(t)
	gen := redistest.OpenConfig(t, cfg, redisstore.Options{})
	other := redistest.OpenConfig(t, cfg, redisstore.Options{})
	for i := range 50 {
		id := "s" + strings.Repeat("x", i)
		if err := gen.Create(ctx, id); err != nil {
			t.Fatal(err)
		}
		sub, err := other.Subscribe(ctx, id, 0)
		if err != nil {
			t.Fatalf("stream %d: subscribe on another replica right after Create: %v", i, err)
		}
		sub.Close()
	}
}
