// Package redisstore is the shared stream store of several replicas: each
// stream is a Redis Stream whose entry IDs are the event seqs, so any
// replica can replay after a cursor and tail the live log.
//
// Layout, for key prefix P and stream id ID:
//
//	P stream:ID        Redis Stream; entry "<seq>-0" {type, data} per event,
//	                   "<seq>-1" {ctl: finished} after the last event,
//	                   "<seq>-2" {ctl: broken} when events were lost
//	P stream:ID:meta   hash {created, last, finished, broken}
//
// Writes never touch the token path: Append only validates and enqueues;
// one writer goroutine pipelines whatever is queued. When the queue
// overflows or a write fails, the stream is marked broken and readers
// resuming from Redis get stream.ErrExpired (the handler then sends
// resync_required) instead of a stream with a hole in it.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/internal/stream"
)

// RedisOptions are the Redis server and the keys the store writes there;
// every replica sharing streams uses the same.
type RedisOptions struct {
	Addr     string // host:port; required
	Password string // "" = none
	DB       int    // database number
	// KeyPrefix starts every key the store writes (streams live under
	// <KeyPrefix>stream:<id>).
	KeyPrefix string
	// LiveTTL is the expiry of a live stream's keys, renewed while the
	// stream grows. 0 means 30m.
	LiveTTL time.Duration
	// FinishedTTL is how long a finished stream stays replayable. 0
	// means 10m.
	FinishedTTL time.Duration
	// QueueSize bounds the events (all streams) waiting for Redis while
	// it is slow or down. 0 means 4096.
	QueueSize int
}

// Options tunes the store beyond RedisOptions.
type Options struct {
	// MaxEvents caps each stream (XADD MAXLEN ~): Redis keeps at least
	// this many of the newest events. 0 means 20000, as the memory store.
	MaxEvents int
	// Logger receives broken-stream and write-failure reports; nil discards.
	Logger *zap.Logger
	// ReadBlock bounds each blocking read of a live subscription (XREAD
	// BLOCK); it is also how soon a tailing reader notices an expired
	// stream. 0 means 2s.
	ReadBlock time.Duration
	// ReaderConns caps the pool of blocking reads, kept apart from the
	// writer's pool so tailing readers can never starve writes. 0 means 64.
	ReaderConns int
}

// Sentinel errors of this store (readers only ever see stream's errors).
var (
	// ErrBroken: an event of the stream could not be queued or written;
	// the stream stays broken, and readers resuming from Redis get
	// stream.ErrExpired.
	ErrBroken = errors.New("redis stream store: stream broken, events were lost on their way to Redis")
	// ErrConflict: AppendDirect found a record with that seq (or a later
	// one) already written, or the stream already finished.
	ErrConflict = errors.New("redis stream store: seq already written or stream finished")
)

const (
	pageSize    = 1000 // entries per XRANGE/XREAD
	maxBatch    = 512  // ops per writer pipeline
	maxBuffered = 4096 // records a subscription holds before it stops reading ahead
	flagRetry   = time.Second
	closeDrain  = 2 * time.Second // how long Close spends writing what is still queued
	// createTimeout bounds Create's write: a stream start waits at most
	// this long for a Redis that does not answer.
	createTimeout = 500 * time.Millisecond
)

// Store is the Redis stream store. It implements stream.Store; the extra
// methods (Exists, AppendDirect, LastSeq, Flush, Client, Prefix) serve
// cross-replica work.
type Store struct {
	cfg        RedisOptions
	maxEvents  int64
	block      time.Duration
	renewEvery time.Duration
	log        *zap.Logger
	client     *redis.Client // writes, replay and meta
	reader     *redis.Client // blocking reads only

	queue   chan op
	flushc  chan chan error
	brokenc chan struct{} // cap 1: a stream was marked broken
	stop    chan struct{}

	mu      sync.RWMutex
	closed  bool
	shut    atomic.Bool         // closed, for Fetch without taking s.mu
	streams map[string]*wstream // streams created here and not yet finished in Redis
	subs    map[*subscription]struct{}

	pendingMu sync.Mutex
	pending   map[*wstream]struct{} // broken streams whose flag Redis does not have yet

	ctx    context.Context // cancelled by Close; parent of every subscription
	cancel context.CancelFunc
	wg     sync.WaitGroup // the writer and every subscription goroutine
}

type opKind uint8

const (
	opAppend opKind = iota
	opFinish
)

type op struct {
	kind opKind
	st   *wstream
	rec  stream.Record
}

// wstream is the writing side of one stream created by this store.
type wstream struct {
	id, key, meta string

	mu       sync.Mutex // guards last and finished
	last     int64
	finished bool
	broken   atomic.Bool

	// Owned by the writer goroutine.
	written   int64 // highest seq sent to Redis
	renewedAt time.Time
	touched   time.Time
}

// Open connects to Redis and starts the writer. An unreachable Redis is
// logged, not fatal: streams are then marked broken until it returns, and
// the store recovers by itself.
func Open(ctx context.Context, cfg RedisOptions, opts Options) (*Store, error) {
	if cfg.Addr == "" {
		return nil, errors.New("redis stream store: redis.addr is empty")
	}
	if cfg.LiveTTL <= 0 {
		cfg.LiveTTL = 30 * time.Minute
	}
	if cfg.FinishedTTL <= 0 {
		cfg.FinishedTTL = 10 * time.Minute
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 4096
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = 20000
	}
	if opts.ReadBlock <= 0 {
		opts.ReadBlock = 2 * time.Second
	}
	if opts.ReaderConns <= 0 {
		opts.ReaderConns = 64
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	s := &Store{
		cfg:       cfg,
		maxEvents: int64(opts.MaxEvents),
		block:     opts.ReadBlock,
		// Renew a live stream's TTL while it grows, but rarely: a tenth of
		// the TTL leaves 90% of it as margin, and never more than once a second.
		renewEvery: max(time.Second, cfg.LiveTTL/10),
		log:        opts.Logger,
		client:     redis.NewClient(clientOptions(cfg, 0, 1)),
		// Blocking reads retry in their own loop, so no client retries.
		reader:  redis.NewClient(clientOptions(cfg, opts.ReaderConns, -1)),
		queue:   make(chan op, cfg.QueueSize),
		flushc:  make(chan chan error),
		brokenc: make(chan struct{}, 1),
		stop:    make(chan struct{}),
		streams: make(map[string]*wstream),
		subs:    make(map[*subscription]struct{}),
		pending: make(map[*wstream]struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.client.Ping(ctx).Err(); err != nil {
		s.log.Warn("redis stream store: Redis unreachable at start; streams are marked broken until it returns",
			zap.String("addr", cfg.Addr), zap.Error(err))
	}
	s.wg.Add(1)
	go s.writeLoop()
	return s, nil
}

func clientOptions(cfg RedisOptions, poolSize, retries int) *redis.Options {
	return &redis.Options{
		Addr:     cfg.Addr,
		Password: cfg.Password,
		DB:       cfg.DB,
		PoolSize: poolSize,
		// Fail fast when Redis is away: the writer marks streams broken
		// and moves on rather than holding the queue behind retries.
		MaxRetries:            retries,
		DialTimeout:           time.Second,
		DialerRetries:         1,
		ReadTimeout:           2 * time.Second,
		WriteTimeout:          2 * time.Second,
		ContextTimeoutEnabled: true,
		DisableIdentity:       true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
}

// Client is the store's Redis client, for the cross-replica stop and
// liveness signals. It is closed by Close.
func (s *Store) Client() *redis.Client { return s.client }

// Prefix is the key prefix of every key the store writes.
func (s *Store) Prefix() string { return s.cfg.KeyPrefix }

func (s *Store) streamKey(id string) string { return s.cfg.KeyPrefix + "stream:" + id }
func (s *Store) metaKey(id string) string   { return s.cfg.KeyPrefix + "stream:" + id + ":meta" }

// Create starts an empty, live stream. Its meta key is written before
// Create returns, not through the queue: the stream's id reaches clients
// in its first event as soon as the generation starts, and a client that
// resumes at once on another replica must find the stream live in Redis
// (an unknown stream is answered with resync_required). When Redis
// refuses, the stream starts anyway, marked broken, as when a later write
// fails.
func (s *Store) Create(ctx context.Context, id string) error {
	st := &wstream{id: id, key: s.streamKey(id), meta: s.metaKey(id), touched: time.Now()}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return stream.ErrClosed
	}
	if _, ok := s.streams[id]; ok {
		s.mu.Unlock()
		return fmt.Errorf("stream %s already exists", id)
	}
	s.streams[id] = st
	s.mu.Unlock()

	// The generation does not depend on its request: neither does its stream.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	_, err := s.client.Pipelined(wctx, func(p redis.Pipeliner) error {
		p.HSet(wctx, st.meta, "created", st.touched.UnixMilli())
		p.Expire(wctx, st.meta, s.cfg.LiveTTL)
		return nil
	})
	if err != nil {
		s.markBroken(st, "create failed: "+err.Error())
	}
	return nil
}

func (s *Store) state(id string) (*wstream, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, stream.ErrClosed
	}
	st, ok := s.streams[id]
	if !ok {
		return nil, stream.ErrNotFound
	}
	return st, nil
}

// creating reports whether this store created stream id and is still
// writing it: Redis may not have its meta yet, but it exists.
func (s *Store) creating(id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.streams[id]
	return ok
}

// Append validates rec and queues it for the writer. It never waits for
// Redis: when the queue is full the record is dropped and the stream is
// marked broken (ErrBroken).
func (s *Store) Append(_ context.Context, id string, rec stream.Record) error {
	st, err := s.state(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished {
		return fmt.Errorf("stream %s: append after finish", id)
	}
	if rec.Seq != st.last+1 {
		return fmt.Errorf("stream %s: append seq %d after %d", id, rec.Seq, st.last)
	}
	st.last = rec.Seq
	if st.broken.Load() {
		return fmt.Errorf("stream %s: %w", id, ErrBroken)
	}
	// Sent under st.mu so that concurrent appends reach the queue in seq order.
	select {
	case s.queue <- op{kind: opAppend, st: st, rec: rec}:
		return nil
	default:
		s.markBroken(st, "write queue full")
		return fmt.Errorf("stream %s: %w", id, ErrBroken)
	}
}

// Finish marks the stream complete. The finish is queued after the
// stream's appends; it switches the keys to finished_ttl.
func (s *Store) Finish(_ context.Context, id string) error {
	st, err := s.state(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished {
		return nil
	}
	st.finished = true
	if st.broken.Load() {
		s.addPending(st) // rewrite the flag as finished, with finished_ttl
		return nil
	}
	select {
	case s.queue <- op{kind: opFinish, st: st}:
	default:
		s.markBroken(st, "write queue full")
	}
	return nil
}

// markBroken records that st lost events; the writer then writes the
// broken flag, retrying until Redis takes it.
func (s *Store) markBroken(st *wstream, reason string) {
	if !st.broken.CompareAndSwap(false, true) {
		return
	}
	s.log.Warn("redis stream store: stream broken; readers resuming from Redis will resync",
		zap.String("stream_id", st.id), zap.String("reason", reason))
	s.addPending(st)
}

func (s *Store) addPending(st *wstream) {
	s.pendingMu.Lock()
	s.pending[st] = struct{}{}
	s.pendingMu.Unlock()
	select {
	case s.brokenc <- struct{}{}:
	default:
	}
}

// forget drops the writing state of a stream whose end Redis now has.
func (s *Store) forget(st *wstream) {
	s.mu.Lock()
	if s.streams[st.id] == st {
		delete(s.streams, st.id)
	}
	s.mu.Unlock()
}

// Flush waits until everything queued before the call has been written
// (or its stream marked broken), then tries to write pending broken
// flags. It fails while a broken flag is still not in Redis.
func (s *Store) Flush(ctx context.Context) error {
	done := make(chan error, 1)
	select {
	case s.flushc <- done:
	case <-s.stop:
		return stream.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Exists reports whether Redis holds stream id (from any replica).
func (s *Store) Exists(ctx context.Context, id string) (bool, error) {
	n, err := s.client.Exists(ctx, s.metaKey(id)).Result()
	if err != nil {
		return false, fmt.Errorf("redis stream store: exists %s: %w: %w", id, stream.ErrUnavailable, err)
	}
	return n > 0, nil
}

// Close writes what is still queued (for at most a couple of seconds),
// ends every subscription with stream.ErrClosed, waits for the store's
// goroutines and closes its Redis clients.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.shut.Store(true)
	subs := make([]*subscription, 0, len(s.subs))
	for sub := range s.subs {
		subs = append(subs, sub)
	}
	s.mu.Unlock()

	close(s.stop)
	s.cancel()
	for _, sub := range subs {
		sub.storeClosed()
	}
	// Closing the reader pool cuts blocking reads short.
	errReader := s.reader.Close()
	s.wg.Wait()
	return errors.Join(errReader, s.client.Close())
}

// entryID is the Redis Stream ID "<seq>-<part>".
func entryID(seq int64, part int) string {
	b := make([]byte, 0, 24)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(part), 10)
	return string(b)
}

// parseID splits "<seq>-<part>".
func parseID(id string) (seq int64, part int64, ok bool) {
	for i := 0; i < len(id); i++ {
		if id[i] == '-' {
			a, err1 := strconv.ParseInt(id[:i], 10, 64)
			b, err2 := strconv.ParseInt(id[i+1:], 10, 64)
			return a, b, err1 == nil && err2 == nil
		}
	}
	return 0, 0, false
}

var _ stream.Store = (*Store)(nil)
