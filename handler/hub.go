package handler

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/internal/metrics"
	"github.com/chatpipe/chatpipe/internal/stream"
)

// Hub writes the SSE streams of answers without a goroutine per reader.
//
// A reader served by net/http holds its handler goroutine, net/http's
// background read and the connection's buffers (10 KiB) for as long as
// its answer lasts, although it only waits: at 2,000 live answers that
// was most of the server's memory. Once a stream's first frames are
// ready, the hub takes the connection over (hijacks it): the handler
// returns, and the reader is a small struct woken by its subscription
// (stream.Notifier) and written by one of a few workers. The response is
// the same SSE stream, chunked as net/http writes it: a stream that ends
// ends with the last chunk, and one that is cut (a stalled client, a
// shutdown past its grace) without it, which clients report as an error.
// The connection closes after the stream (Connection: close).
//
// Writes never wait on a slow client: a write takes what the socket takes
// at once; the rest is kept and retried after a pause that grows while
// the client takes nothing (no event or heartbeat retries it sooner), and
// a client that takes nothing for the write timeout is cut, as before. A client that left is found at the next write (an
// event or a heartbeat). Streams that are not HTTP/1.1 connections,
// or whose store cannot notify (a replica reading another's stream from
// Redis), or that must re-send pending approvals, keep a goroutine.
type Hub struct {
	opts HubOptions

	mu      sync.Mutex
	work    *sync.Cond
	queue   []*hubStream
	streams map[*hubStream]struct{}
	closed  bool
	// draining: Drain waits; new streams keep their goroutine (the
	// server's shutdown waits for those). drained is closed when the
	// last stream ends and no hand-over is under way (taking).
	draining bool
	drained  chan struct{}
	taking   int

	workers sync.WaitGroup
	stop    chan struct{}
}

// HubOptions configures a Hub.
type HubOptions struct {
	Workers int              // goroutines writing streams; <= 0 = 2 × GOMAXPROCS, at least 4
	Logger  *zap.Logger      // nil = no logs
	Metrics *metrics.Metrics // nil = not counted
	// Heartbeat and WriteTimeout are read at each use (they may be
	// reloaded): the interval of ": ping" comments on an idle stream, and
	// how long a client may take nothing before it is cut.
	Heartbeat    func() time.Duration
	WriteTimeout func() time.Duration
}

// hubWriteWindow is how long one write may wait for a full socket before
// the rest is kept for later; hubRetryMin/Max bound the pause before the
// next attempt.
const (
	hubWriteWindow = 500 * time.Microsecond
	hubRetryMin    = 10 * time.Millisecond
	hubRetryMax    = time.Second
)

// hubLinger is how long a connection whose stream ended is kept, its
// sending side closed, before it is closed: closing a socket with unread
// bytes from the client (the tail of a request body) resets the
// connection, and the client could lose the last frames.
const hubLinger = 500 * time.Millisecond

// NewHub starts a hub's workers; Close stops them.
func NewHub(opts HubOptions) *Hub {
	if opts.Workers <= 0 {
		opts.Workers = max(4, 2*runtime.GOMAXPROCS(0))
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	hb := &Hub{opts: opts, streams: make(map[*hubStream]struct{}), stop: make(chan struct{})}
	hb.work = sync.NewCond(&hb.mu)
	hb.workers.Add(opts.Workers + 1)
	for range opts.Workers {
		go hb.worker()
	}
	go hb.heartbeats()
	return hb
}

// hubStream is one reader the hub serves.
type hubStream struct {
	hub  *Hub
	conn net.Conn
	sub  stream.Subscription
	id   string

	// state: idle, queued (in the hub's queue), running (a worker has it)
	// or again (running, and woken meanwhile: run once more).
	state atomic.Int32

	// Written by the worker that runs it (one at a time).
	out       []byte    // bytes the socket did not take yet
	done      bool      // every record was fetched: close once out is written
	stalled   time.Time // since when out has waited; zero when it is empty
	retry     time.Duration
	retryAt   time.Time    // out is not tried again before
	lastWrite atomic.Int64 // unix nanoseconds, read by the heartbeat scan
	ping      atomic.Bool  // the heartbeat asks for a ": ping"
	timer     *time.Timer  // the pending retry
	ended     bool
}

const (
	hubIdle int32 = iota
	hubQueued
	hubRunning
	hubAgain
	hubEnded
)

// take hands t's connection to the hub, with t's first frames (fetched,
// not yet written); false, with nothing written, when it cannot (the
// caller then serves t itself).
func (hb *Hub) take(t *streamTail) bool {
	n, ok := t.sub.(stream.Notifier)
	if !ok || t.pending != nil {
		return false
	}
	uw, ok := t.c.Writer.(interface{ Unwrap() http.ResponseWriter })
	if !ok {
		return false
	}
	// HTTP/1.1 only: HTTP/2 cannot be hijacked, and an HTTP/1.0 client
	// knows no chunks.
	if _, ok := uw.Unwrap().(http.Hijacker); !ok || t.c.Request.ProtoMajor != 1 || t.c.Request.ProtoMinor < 1 {
		return false
	}
	hb.mu.Lock()
	if hb.closed || hb.draining {
		hb.mu.Unlock()
		return false
	}
	hb.taking++ // Drain waits for it
	hb.mu.Unlock()
	defer hb.tookOne()
	head := responseHead(t.c)
	// What the client sent past the request (in the returned reader) is
	// never read: the connection closes when the stream ends, and
	// net/http's buffers go to the collector.
	conn, _, err := t.c.Writer.Hijack()
	if err != nil {
		// Nothing was written; net/http still owns the connection.
		return false
	}
	s := &hubStream{hub: hb, conn: conn, sub: t.sub, id: t.id}
	s.out = beginChunk(head)
	s.out = append(s.out, t.w.buf...)
	t.w.buf = nil
	s.out = appendRecords(s.out, t.recs)
	s.out = endChunk(s.out, len(head))
	s.done = t.done
	if s.done {
		s.out = append(s.out, lastChunk...)
	}
	if hb.opts.Metrics != nil {
		hb.opts.Metrics.SSEWritten(len(t.recs), 0)
	}
	hb.mu.Lock()
	if hb.closed {
		hb.mu.Unlock()
		conn.Close() // cut: the server is closing
		t.sub.Close()
		return true
	}
	hb.streams[s] = struct{}{}
	hb.mu.Unlock()
	s.lastWrite.Store(time.Now().UnixNano())
	n.Notify(s.wake)
	s.wake() // the first frames, and any record appended before Notify
	return true
}

// tookOne ends a hand-over (take) under way.
func (hb *Hub) tookOne() {
	hb.mu.Lock()
	hb.taking--
	hb.checkDrained()
	hb.mu.Unlock()
}

// checkDrained closes drained once nothing is left; the caller holds mu.
func (hb *Hub) checkDrained() {
	if len(hb.streams) == 0 && hb.taking == 0 && hb.drained != nil {
		close(hb.drained)
		hb.drained = nil
	}
}

// responseHead is the response's status line and headers, as net/http
// would have written them for a chunked stream on a connection that
// closes after it.
func responseHead(c *gin.Context) []byte {
	h := c.Writer.Header()
	h.Set("Connection", "close")
	h.Set("Transfer-Encoding", "chunked")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	_ = h.Write(&b)
	b.WriteString("\r\n")
	return b.Bytes()
}

// A chunk's size line goes before its data, which is appended first:
// beginChunk leaves room for it (at most 8 hex digits and CRLF) and
// endChunk writes it in, right before the data, and returns the chunk
// (with what preceded the room, dst[:from]).
const chunkRoom = 10

var lastChunk = []byte("0\r\n\r\n")

func beginChunk(dst []byte) []byte {
	for range chunkRoom {
		dst = append(dst, 0)
	}
	return dst
}

// endChunk closes the chunk begun at buf[from:]; an empty chunk (nothing
// appended) is left out, since a zero size is the last chunk.
func endChunk(buf []byte, from int) []byte {
	n := len(buf) - from - chunkRoom
	if n == 0 {
		return buf[:from]
	}
	var size [16]byte
	hex := strconv.AppendInt(size[:0], int64(n), 16)
	start := from + chunkRoom - len(hex) - 2
	copy(buf[start:], hex)
	buf[start+len(hex)], buf[start+len(hex)+1] = '\r', '\n'
	buf = append(buf, '\r', '\n')
	return append(buf[:from], buf[start:]...) // slide it over the unused room
}

// wake queues s for a worker, unless it is queued already; a stream
// running now runs once more. Called by the store with the stream's lock
// held: it only takes the hub's.
func (s *hubStream) wake() {
	for {
		switch st := s.state.Load(); st {
		case hubIdle:
			if s.state.CompareAndSwap(hubIdle, hubQueued) {
				hb := s.hub
				hb.mu.Lock()
				hb.queue = append(hb.queue, s)
				hb.mu.Unlock()
				hb.work.Signal()
				return
			}
		case hubRunning:
			if s.state.CompareAndSwap(hubRunning, hubAgain) {
				return
			}
		default: // queued, again or ended
			return
		}
	}
}

// worker runs queued streams until the hub closes.
func (hb *Hub) worker() {
	defer hb.workers.Done()
	var w hubWork
	for {
		hb.mu.Lock()
		for len(hb.queue) == 0 && !hb.closed {
			hb.work.Wait()
		}
		if hb.closed {
			hb.mu.Unlock()
			return
		}
		s := hb.queue[0]
		hb.queue[0] = nil
		hb.queue = hb.queue[1:]
		if len(hb.queue) == 0 {
			hb.queue = hb.queue[:0:0] // let a long queue's array go
		}
		hb.mu.Unlock()
		s.state.Store(hubRunning)
		for {
			w.run(s)
			if s.ended || s.state.CompareAndSwap(hubRunning, hubIdle) {
				break
			}
			s.state.Store(hubRunning) // it was woken meanwhile
		}
	}
}

// hubWork is a worker's reusable buffers.
type hubWork struct {
	recs []stream.Record
	buf  []byte
}

// run writes what s has to send: what the socket did not take last time,
// then the records appended since, or a heartbeat.
func (w *hubWork) run(s *hubStream) {
	if s.ended {
		return
	}
	if len(s.out) > 0 {
		if time.Now().Before(s.retryAt) {
			return // its retry timer runs it: a stalled client costs no write per event
		}
		if !s.write(s.out) {
			return
		}
	}
	if !s.done {
		var err error
		w.recs, s.done, err = s.sub.Fetch(w.recs[:0])
		w.buf = beginChunk(w.buf[:0])
		switch {
		case errors.Is(err, stream.ErrExpired):
			// This reader fell behind the retained window.
			s.done = true
			w.buf = appendResync(w.buf, s.id)
		case err != nil:
			if !errors.Is(err, stream.ErrClosed) {
				s.hub.opts.Logger.Warn("stream read ended", zap.String("stream_id", s.id), zap.Error(err))
			}
			s.end(false)
			return
		default:
			w.buf = appendRecords(w.buf, w.recs)
			if m := s.hub.opts.Metrics; m != nil && len(w.recs) > 0 {
				m.SSEWritten(len(w.recs), 0)
			}
		}
		clear(w.recs) // the records' data is not kept past this run
		if len(w.buf) == chunkRoom && s.ping.Swap(false) {
			w.buf = append(w.buf, ": ping\n\n"...)
		}
		w.buf = endChunk(w.buf, 0)
		if s.done {
			w.buf = append(w.buf, lastChunk...)
		}
		if len(w.buf) > 0 && !s.write(w.buf) {
			w.shrink()
			return
		}
		w.shrink()
	}
	if s.done && len(s.out) == 0 {
		s.end(true)
	}
}

// shrink drops a buffer a long replay grew.
func (w *hubWork) shrink() {
	if cap(w.buf) > 64<<10 {
		w.buf = nil
	}
	if cap(w.recs) > 1024 {
		w.recs = nil
	}
}

// write sends p, keeping in s.out what the socket does not take within
// the write window; false when the stream cannot go on now (a retry is
// scheduled, or the stream ended).
func (s *hubStream) write(p []byte) bool {
	now := time.Now()
	_ = s.conn.SetWriteDeadline(now.Add(hubWriteWindow))
	n, err := s.conn.Write(p)
	if m := s.hub.opts.Metrics; m != nil && n > 0 {
		m.SSEWritten(0, n)
	}
	if err == nil {
		s.out = s.out[:0]
		if cap(s.out) > 4<<10 {
			s.out = nil
		}
		s.stalled, s.retry, s.retryAt = time.Time{}, 0, time.Time{}
		s.lastWrite.Store(now.UnixNano())
		return true
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		s.end(false) // the client left
		return false
	}
	rest := p[n:]
	if len(s.out) > 0 && &s.out[0] == &p[0] {
		s.out = s.out[:copy(s.out, rest)]
	} else {
		s.out = append(s.out[:0], rest...)
	}
	if n > 0 || s.stalled.IsZero() {
		s.stalled, s.retry = now, 0 // it takes something: try again soon
		s.lastWrite.Store(now.UnixNano())
	}
	if now.Sub(s.stalled) >= s.hub.opts.WriteTimeout() {
		s.end(false) // took nothing for the write timeout: cut, as a stalled reader always was
		return false
	}
	s.retry = min(max(2*s.retry, hubRetryMin), hubRetryMax)
	s.retryAt = now.Add(s.retry)
	if s.timer == nil {
		s.timer = time.AfterFunc(s.retry, s.wake)
	} else {
		s.timer.Reset(s.retry)
	}
	return false
}

// end closes the connection and the subscription, once; the worker that
// runs s calls it (or Close, once no worker runs). A stream written to
// its end (whole) lingers with its sending side closed (hubLinger); one
// that is cut closes at once.
func (s *hubStream) end(whole bool) {
	if s.ended {
		return
	}
	s.ended = true
	s.state.Store(hubEnded)
	if s.timer != nil {
		s.timer.Stop()
	}
	if cw, ok := s.conn.(interface{ CloseWrite() error }); whole && ok && cw.CloseWrite() == nil {
		time.AfterFunc(hubLinger, func() { s.conn.Close() })
	} else {
		s.conn.Close()
	}
	s.sub.Close()
	s.out = nil
	hb := s.hub
	hb.mu.Lock()
	delete(hb.streams, s)
	hb.checkDrained()
	hb.mu.Unlock()
}

// heartbeats asks idle streams for a ": ping" every heartbeat interval,
// which also finds clients that left.
func (hb *Hub) heartbeats() {
	defer hb.workers.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var idle []*hubStream
	for {
		select {
		case <-hb.stop:
			return
		case now := <-tick.C:
			due := now.Add(-hb.opts.Heartbeat()).UnixNano()
			hb.mu.Lock()
			for s := range hb.streams {
				if s.lastWrite.Load() <= due {
					idle = append(idle, s)
				}
			}
			hb.mu.Unlock()
			for i, s := range idle {
				s.ping.Store(true)
				s.wake()
				idle[i] = nil
			}
			idle = idle[:0]
		}
	}
}

// Len is the number of streams the hub serves (tests look at it).
func (hb *Hub) Len() int {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return len(hb.streams)
}

// Drain waits until every stream the hub serves has ended (their answers
// finish at shutdown) or ctx ends; it takes no new streams meanwhile.
func (hb *Hub) Drain(ctx context.Context) {
	hb.mu.Lock()
	hb.draining = true
	if len(hb.streams) == 0 && hb.taking == 0 {
		hb.mu.Unlock()
		return
	}
	if hb.drained == nil {
		hb.drained = make(chan struct{})
	}
	done := hb.drained
	hb.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Close ends every stream still served (their clients may reconnect to
// another replica or reload the saved answer) and stops the workers.
func (hb *Hub) Close() {
	hb.mu.Lock()
	if hb.closed {
		hb.mu.Unlock()
		return
	}
	hb.closed = true
	close(hb.stop)
	hb.work.Broadcast()
	hb.mu.Unlock()
	hb.workers.Wait()
	// No worker runs now: end what is left here.
	hb.mu.Lock()
	left := make([]*hubStream, 0, len(hb.streams))
	for s := range hb.streams {
		left = append(left, s)
	}
	hb.queue = nil
	hb.mu.Unlock()
	for _, s := range left {
		s.end(false)
	}
}
