package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/stream"
)

// subscription reads one stream from Redis. Its goroutine replays and then
// tails with bounded XREAD BLOCKs into a bounded buffer; Fetch only takes
// from that buffer, so it never blocks.
type subscription struct {
	s         *Store
	id        string
	key, meta string
	ready     chan struct{} // cap 1: records, the end or an error arrived
	space     chan struct{} // cap 1: Fetch emptied the buffer
	ctx       context.Context
	cancel    context.CancelFunc

	mu     sync.Mutex
	buf    []stream.Record
	cursor int64  // seq of the last record buffered
	lastID string // Redis ID of the last entry read
	done   bool   // every record up to the end is buffered
	err    error  // terminal (ErrExpired), returned once buf is drained
}

// Subscribe returns a reader positioned after seq `after`. In one round
// trip it reads the meta and the first page of the replay, so a finished
// stream with nothing left to send is done at once (the handler answers
// 204), and a cursor before the retained window fails with
// stream.ErrExpired. A broken stream is stream.ErrExpired for every cursor.
func (s *Store) Subscribe(ctx context.Context, id string, after int64) (stream.Subscription, error) {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return nil, stream.ErrClosed
	}
	after = max(after, 0)
	sub := &subscription{
		s: s, id: id, key: s.streamKey(id), meta: s.metaKey(id),
		ready: make(chan struct{}, 1), space: make(chan struct{}, 1),
		cursor: after, lastID: entryID(after, 0),
	}
	// Asked before reading Redis: once the writer forgets the stream,
	// Redis has its meta.
	creating := s.creating(id)
	var (
		meta *redis.MapStringStringCmd
		page *redis.XMessageSliceCmd
	)
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		meta = p.HGetAll(ctx, sub.meta)
		page = p.XRangeN(ctx, sub.key, entryID(after+1, 0), "+", pageSize)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redis stream store: subscribe %s: %w: %w", id, stream.ErrUnavailable, err)
	}
	m := meta.Val()
	if len(m) == 0 && !creating {
		return nil, stream.ErrNotFound
	}
	if m["broken"] != "" {
		return nil, stream.ErrExpired
	}
	sub.deliver(page.Val())
	if sub.err != nil {
		return nil, sub.err
	}
	sub.settle(m, creating)
	if sub.done {
		return sub, nil
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, stream.ErrClosed
	}
	sub.ctx, sub.cancel = context.WithCancel(s.ctx)
	s.subs[sub] = struct{}{}
	s.wg.Add(1)
	go sub.tail()
	return sub, nil
}

// deliver buffers the entries after the cursor; the caller holds sub.mu
// (or owns sub exclusively). Entry "<seq>-0" is a record, "<seq>-1" the
// finish marker and "<seq>-2" the broken marker. A hole in the seqs means
// the window was trimmed past the cursor or events were lost.
func (sub *subscription) deliver(msgs []redis.XMessage) {
	for _, m := range msgs {
		sub.lastID = m.ID
		seq, part, ok := parseID(m.ID)
		if !ok || sub.done || sub.err != nil {
			continue
		}
		switch part {
		case 0:
			if seq <= sub.cursor {
				continue // already delivered
			}
			if seq != sub.cursor+1 {
				sub.err = stream.ErrExpired
				continue
			}
			typ, _ := m.Values["type"].(string)
			data, _ := m.Values["data"].(string)
			sub.buf = append(sub.buf, stream.Record{Seq: seq, Type: typ, Data: []byte(data)})
			sub.cursor = seq
			// A record appended by AppendDirect can end the stream without a marker.
			if typ == string(eventbus.TypeStreamFinished) {
				sub.done = true
			}
		case 1:
			if seq > sub.cursor {
				sub.err = stream.ErrExpired
			} else {
				sub.done = true
			}
		default:
			sub.err = stream.ErrExpired
		}
	}
}

// settle applies the meta hash m, read after the store said whether it is
// still creating the stream; the caller holds sub.mu (or owns sub). It
// reports whether the subscription has ended.
func (sub *subscription) settle(m map[string]string, creating bool) bool {
	switch {
	case sub.done || sub.err != nil:
	case len(m) == 0 && creating:
		// Created here, and Create is still writing its meta.
	case len(m) == 0 || m["broken"] != "":
		// Expired under a reader that had not caught up, or events lost.
		sub.err = stream.ErrExpired
	case m["finished"] != "":
		last, _ := strconv.ParseInt(m["last"], 10, 64)
		if sub.cursor >= last {
			sub.done = true
		}
	}
	return sub.done || sub.err != nil
}

// tail reads until the stream ends, the subscription closes or the store
// closes. Redis errors are retried with a backoff: a reader on a replica
// that lost Redis waits, and once Redis is back it sees the stream's
// broken flag, if any.
func (sub *subscription) tail() {
	defer sub.s.wg.Done()
	var backoff time.Duration
	for {
		if !sub.waitSpace() {
			return
		}
		sub.mu.Lock()
		lastID := sub.lastID
		sub.mu.Unlock()
		res, err := sub.s.reader.XRead(sub.ctx, &redis.XReadArgs{
			Streams: []string{sub.key, lastID}, Count: pageSize, Block: sub.s.block,
		}).Result()
		if sub.ctx.Err() != nil {
			return
		}
		var ended bool
		switch {
		case errors.Is(err, redis.Nil):
			// Nothing new within the block time: the stream may have
			// expired, or ended by a route that left no marker.
			creating := sub.s.creating(sub.id)
			m, err := sub.s.client.HGetAll(sub.ctx, sub.meta).Result()
			if err != nil {
				backoff = sub.pause(backoff)
				continue
			}
			backoff = 0
			sub.mu.Lock()
			ended = sub.settle(m, creating)
			sub.mu.Unlock()
			if !ended {
				continue
			}
		case err != nil:
			backoff = sub.pause(backoff)
			continue
		default:
			backoff = 0
			sub.mu.Lock()
			for _, xs := range res {
				sub.deliver(xs.Messages)
			}
			ended = sub.done || sub.err != nil
			sub.mu.Unlock()
		}
		sub.signal()
		if ended {
			return
		}
	}
}

// pause waits before retrying a failed read: 100ms doubling up to 2s.
func (sub *subscription) pause(prev time.Duration) time.Duration {
	next := min(max(2*prev, 100*time.Millisecond), 2*time.Second)
	t := time.NewTimer(next)
	defer t.Stop()
	select {
	case <-t.C:
	case <-sub.ctx.Done():
	}
	return next
}

// waitSpace holds the goroutine while the reader has maxBuffered records
// it has not fetched: a slow reader costs a bounded buffer, and Redis
// keeps the rest.
func (sub *subscription) waitSpace() bool {
	for {
		sub.mu.Lock()
		n := len(sub.buf)
		sub.mu.Unlock()
		if n < maxBuffered {
			return true
		}
		select {
		case <-sub.space:
		case <-sub.ctx.Done():
			return false
		}
	}
}

func (sub *subscription) signal() {
	select {
	case sub.ready <- struct{}{}:
	default:
	}
}

// Fetch returns the buffered records without waiting. A terminal error is
// returned once the records before it have been fetched.
func (sub *subscription) Fetch(buf []stream.Record) ([]stream.Record, bool, error) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.s.shut.Load() {
		return buf, false, stream.ErrClosed
	}
	if len(sub.buf) > 0 {
		buf = append(buf, sub.buf...)
		clear(sub.buf)
		sub.buf = sub.buf[:0]
		select {
		case sub.space <- struct{}{}:
		default:
		}
		return buf, sub.done && sub.err == nil, nil
	}
	if sub.err != nil {
		return buf, false, sub.err
	}
	return buf, sub.done, nil
}

// Ready is signalled when records, the end or an error have arrived.
func (sub *subscription) Ready() <-chan struct{} { return sub.ready }

// Close stops the subscription's goroutine (it exits within one block
// time; the store's Close waits for it).
func (sub *subscription) Close() {
	if sub.cancel == nil {
		return // ended at Subscribe: no goroutine
	}
	sub.cancel()
	sub.s.mu.Lock()
	delete(sub.s.subs, sub)
	sub.s.mu.Unlock()
}

// storeClosed wakes the reader, whose next Fetch fails with stream.ErrClosed.
func (sub *subscription) storeClosed() { sub.signal() }
