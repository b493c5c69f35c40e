package stream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// big is a record of n data bytes.
func big(seq int64, n int) Record {
	return Record{Seq: seq, Type: "answer.delta", Data: make([]byte, n)}
}

func appendAll(t *testing.T, m *Memory, id string, from, to int64, size int) {
	t.Helper()
	for i := from; i <= to; i++ {
		if err := m.Append(context.Background(), id, big(i, size)); err != nil {
			t.Fatalf("append %s/%d: %v", id, i, err)
		}
	}
}

// Many finished streams beyond the global budget: the oldest finished go
// first (their readers get ErrExpired, i.e. resync_required), the newest
// stay whole, and the store stays within its budget.
func TestMemoryGlobalBoundEvictsFinishedStreamsOldestFirst(t *testing.T) {
	ctx := context.Background()
	const chunk, perStream = 10_000, 10 // 100 KB a stream
	m := newStore(t, MemoryOptions{MaxBytes: 1 << 20, MaxTotalBytes: 1 << 20})
	for i := range 30 {
		id := fmt.Sprint("s", i)
		_ = m.Create(ctx, id)
		appendAll(t, m, id, 1, perStream, chunk)
		_ = m.Finish(ctx, id)
		if got := m.Bytes(); got > 1<<20 {
			t.Fatalf("after stream %d the store holds %d bytes, over its 1 MiB budget", i, got)
		}
	}
	if _, err := m.Subscribe(ctx, "s0", 0); !errors.Is(err, ErrExpired) {
		t.Errorf("oldest finished stream: Subscribe = %v, want ErrExpired", err)
	}
	sub, err := m.Subscribe(ctx, "s29", 0)
	if err != nil {
		t.Fatalf("newest finished stream: %v", err)
	}
	defer sub.Close()
	if recs, done, err := sub.Fetch(nil); err != nil || !done || len(recs) != perStream {
		t.Errorf("newest finished stream replays %d records (done %v, %v), want all %d", len(recs), done, err, perStream)
	}
	// Evicted oldest first: once one stream is whole, all newer ones are.
	whole := false
	for i := range 30 {
		s, err := m.Subscribe(ctx, fmt.Sprint("s", i), 0)
		if err == nil {
			s.Close()
			whole = true
		} else if whole {
			t.Errorf("s%d was evicted although an older stream was kept", i)
		}
	}
}

// A reader in the middle of replaying a finished stream that gets
// evicted is told to resync; it never sees a gap.
func TestMemoryGlobalBoundTellsAReaderOfAnEvictedStreamToResync(t *testing.T) {
	ctx := context.Background()
	m := newStore(t, MemoryOptions{MaxBytes: 1 << 20, MaxTotalBytes: 1 << 20})
	_ = m.Create(ctx, "old")
	appendAll(t, m, "old", 1, 50, 10_000)
	_ = m.Finish(ctx, "old")
	reader, err := m.Subscribe(ctx, "old", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	_ = m.Create(ctx, "new")
	appendAll(t, m, "new", 1, 80, 10_000) // pushes "old" out
	if _, _, err := reader.Fetch(nil); !errors.Is(err, ErrExpired) {
		t.Fatalf("reader of the evicted stream: %v, want ErrExpired", err)
	}
}

// Live streams alone over the budget: the largest loses its oldest
// events; a reader that keeps up loses nothing, a reader behind the cut
// gets ErrExpired, and every stream keeps its newest event.
func TestMemoryGlobalBoundTrimsTheLargestLiveStreamNeverSilently(t *testing.T) {
	ctx := context.Background()
	m := newStore(t, MemoryOptions{MaxBytes: 4 << 20, MaxTotalBytes: 1 << 20})
	_ = m.Create(ctx, "small")
	appendAll(t, m, "small", 1, 5, 1000)
	_ = m.Create(ctx, "large")
	keeping, _ := m.Subscribe(ctx, "large", 0)
	defer keeping.Close()
	behind, _ := m.Subscribe(ctx, "large", 0)
	defer behind.Close()
	var got int64
	for i := int64(1); i <= 300; i++ {
		appendAll(t, m, "large", i, i, 10_000)
		recs, _, err := keeping.Fetch(nil)
		if err != nil {
			t.Fatalf("a reader keeping up lost its place at %d: %v", i, err)
		}
		for _, r := range recs {
			if r.Seq != got+1 {
				t.Fatalf("gap: got %d after %d", r.Seq, got)
			}
			got = r.Seq
		}
	}
	if got != 300 {
		t.Fatalf("the reader keeping up got %d events, want 300", got)
	}
	if b := m.Bytes(); b > 1<<20 {
		t.Errorf("store holds %d bytes, over its budget", b)
	}
	if _, _, err := behind.Fetch(nil); !errors.Is(err, ErrExpired) {
		t.Errorf("reader behind the cut: %v, want ErrExpired", err)
	}
	small, err := m.Subscribe(ctx, "small", 0)
	if err != nil {
		t.Fatalf("the small live stream was trimmed instead of the largest: %v", err)
	}
	defer small.Close()
	if recs, _, _ := small.Fetch(nil); len(recs) != 5 {
		t.Errorf("small stream holds %d events, want 5", len(recs))
	}
}

// The store's count of retained bytes goes back to zero when every stream
// is dropped, whichever way (per-stream bounds, eviction, expiry).
func TestMemoryBytesAccountingReturnsToZero(t *testing.T) {
	ctx := context.Background()
	m := newStore(t, MemoryOptions{MaxEvents: 7, MaxBytes: 50_000, MaxTotalBytes: 200_000, Retention: time.Minute})
	for i := range 20 {
		id := fmt.Sprint("s", i)
		_ = m.Create(ctx, id)
		appendAll(t, m, id, 1, 12, 5000)
		if i%2 == 0 {
			_ = m.Finish(ctx, id)
		}
	}
	for i := range 20 {
		_ = m.Finish(ctx, fmt.Sprint("s", i))
	}
	m.sweep(time.Now().Add(time.Hour))
	if m.Len() != 0 || m.Bytes() != 0 {
		t.Fatalf("after every stream expired: %d streams, %d bytes", m.Len(), m.Bytes())
	}
}
