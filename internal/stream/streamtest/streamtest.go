// Package streamtest is the conformance suite of stream.Store: every
// behaviour readers rely on, run against each implementation (memory,
// Redis, tiered) so they behave the same.
//
// Stores that write asynchronously (Redis queues its writes) are awaited
// through the interface only: the suite waits on Ready and Fetch with a
// deadline, never on a sleep.
package streamtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/stream"
)

// MaxEvents is the retention open must configure: the store keeps at
// least MaxEvents of a stream's newest events, and far fewer than
// 10×MaxEvents (approximate trimming is fine).
const MaxEvents = 100

// wait bounds every wait of the suite; reaching it is a failure.
const wait = 15 * time.Second

// Run runs the suite. open returns a new, empty store retaining about
// MaxEvents events per stream, and closes it when the test ends (the
// suite may close it first: Close must be idempotent).
func Run(t *testing.T, open func(t *testing.T) stream.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, st stream.Store)
	}{
		{"CreateAppendFinishReplaysEverythingThenDone", testCreateAppendFinish},
		{"EmptyFinishedStreamIsDone", testEmptyFinished},
		{"ReplayAfterCursorThenLiveTailHasNoGapOrDuplicate", testReplayThenTail},
		{"UnknownStreamIsNotFound", testUnknown},
		{"CreateTwiceFails", testCreateTwice},
		{"CursorBeforeRetainedWindowIsExpired", testExpiredWindow},
		{"FinishedStreamReplaysThenIsDone", testFinishedReplay},
		{"FetchNeverBlocks", testFetchNeverBlocks},
		{"ReadyWakesWaitingReader", testReadyWakes},
		{"SeveralReadersOfOneStreamEachGetEverything", testSeveralReaders},
		{"SlowReaderNeverBlocksAppend", testSlowReader},
		{"AppendAfterFinishOrOutOfOrderIsRejected", testRejectedAppends},
		{"CloseEndsReaders", testCloseEndsReaders},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// Rec is the suite's record with seq: a delta whose data names its seq.
func Rec(seq int64) stream.Record {
	return stream.Record{Seq: seq, Type: "answer.delta",
		Data: fmt.Appendf(nil, `{"seq":%d,"type":"answer.delta","content":"token %d"}`, seq, seq)}
}

func appendRange(st stream.Store, id string, from, to int64) error {
	ctx := context.Background()
	for seq := from; seq <= to; seq++ {
		if err := st.Append(ctx, id, Rec(seq)); err != nil {
			return fmt.Errorf("append %d: %w", seq, err)
		}
	}
	return nil
}

func mustCreate(t *testing.T, st stream.Store, id string) {
	t.Helper()
	if err := st.Create(context.Background(), id); err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
}

func mustAppend(t *testing.T, st stream.Store, id string, from, to int64) {
	t.Helper()
	if err := appendRange(st, id, from, to); err != nil {
		t.Fatal(err)
	}
}

func mustFinish(t *testing.T, st stream.Store, id string) {
	t.Helper()
	if err := st.Finish(context.Background(), id); err != nil {
		t.Fatalf("finish %s: %v", id, err)
	}
}

func mustSubscribe(t *testing.T, st stream.Store, id string, after int64) stream.Subscription {
	t.Helper()
	sub, err := st.Subscribe(context.Background(), id, after)
	if err != nil {
		t.Fatalf("subscribe %s after %d: %v", id, after, err)
	}
	t.Cleanup(sub.Close)
	return sub
}

// ReadAll reads sub until the stream is done, waiting on Ready between
// empty fetches; it fails after the suite's deadline. It is safe to call
// from any goroutine.
func ReadAll(sub stream.Subscription) ([]stream.Record, error) {
	var all []stream.Record
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		recs, done, err := sub.Fetch(nil)
		all = append(all, recs...)
		if err != nil {
			return all, err
		}
		if done {
			return all, nil
		}
		if len(recs) == 0 {
			select {
			case <-sub.Ready():
			case <-deadline.C:
				return all, fmt.Errorf("not done after %v (%d records read)", wait, len(all))
			}
		}
	}
}

func mustReadAll(t *testing.T, sub stream.Subscription) []stream.Record {
	t.Helper()
	recs, err := ReadAll(sub)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return recs
}

// CheckRange verifies recs are exactly Rec(first)..Rec(last): no gap, no
// duplicate, type and data intact.
func CheckRange(recs []stream.Record, first, last int64) error {
	if want := last - first + 1; int64(len(recs)) != max(want, 0) {
		return fmt.Errorf("got %d records%s, want %d (%d..%d)", len(recs), span(recs), max(want, 0), first, last)
	}
	for i, r := range recs {
		want := Rec(first + int64(i))
		if r.Seq != want.Seq || r.Type != want.Type || string(r.Data) != string(want.Data) {
			return fmt.Errorf("record %d = {%d %q %s}, want {%d %q %s}", i, r.Seq, r.Type, r.Data, want.Seq, want.Type, want.Data)
		}
	}
	return nil
}

func span(recs []stream.Record) string {
	if len(recs) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d..%d)", recs[0].Seq, recs[len(recs)-1].Seq)
}

func mustRange(t *testing.T, recs []stream.Record, first, last int64) {
	t.Helper()
	if err := CheckRange(recs, first, last); err != nil {
		t.Fatal(err)
	}
}

func testCreateAppendFinish(t *testing.T, st stream.Store) {
	mustCreate(t, st, "s")
	mustAppend(t, st, "s", 1, 3)
	mustFinish(t, st, "s")
	mustRange(t, mustReadAll(t, mustSubscribe(t, st, "s", 0)), 1, 3)
}

func testEmptyFinished(t *testing.T, st stream.Store) {
	mustCreate(t, st, "s")
	mustFinish(t, st, "s")
	mustRange(t, mustReadAll(t, mustSubscribe(t, st, "s", 0)), 1, 0)
}

func testReplayThenTail(t *testing.T, st stream.Store) {
	mustCreate(t, st, "s")
	mustAppend(t, st, "s", 1, 10)
	sub := mustSubscribe(t, st, "s", 4)
	var (
		wg      sync.WaitGroup
		got     []stream.Record
		readErr error
	)
	wg.Go(func() { got, readErr = ReadAll(sub) })
	var writeErr error
	wg.Go(func() {
		// Within the window: a reader that keeps up may never expire.
		if writeErr = appendRange(st, "s", 11, MaxEvents); writeErr == nil {
			writeErr = st.Finish(context.Background(), "s")
		}
	})
	wg.Wait()
	if writeErr != nil || readErr != nil {
		t.Fatalf("write: %v; read: %v", writeErr, readErr)
	}
	mustRange(t, got, 5, MaxEvents)
}

func testUnknown(t *testing.T, st stream.Store) {
	ctx := context.Background()
	if _, err := st.Subscribe(ctx, "nope", 0); !errors.Is(err, stream.ErrNotFound) {
		t.Errorf("subscribe: err = %v, want ErrNotFound", err)
	}
	if err := st.Append(ctx, "nope", Rec(1)); !errors.Is(err, stream.ErrNotFound) {
		t.Errorf("append: err = %v, want ErrNotFound", err)
	}
	if err := st.Finish(ctx, "nope"); !errors.Is(err, stream.ErrNotFound) {
		t.Errorf("finish: err = %v, want ErrNotFound", err)
	}
}

func testCreateTwice(t *testing.T, st stream.Store) {
	mustCreate(t, st, "s")
	if err := st.Create(context.Background(), "s"); err == nil {
		t.Fatal("second create of the same id accepted")
	}
}

func testExpiredWindow(t *testing.T, st stream.Store) {
	const last = 10 * MaxEvents
	mustCreate(t, st, "s")
	mustAppend(t, st, "s", 1, last)
	mustFinish(t, st, "s")
	// Reading the tail to its end also waits for asynchronous writes.
	mustRange(t, mustReadAll(t, mustSubscribe(t, st, "s", last-5)), last-5+1, last)

	if _, err := st.Subscribe(context.Background(), "s", 0); !errors.Is(err, stream.ErrExpired) {
		t.Fatalf("subscribe before the window: err = %v, want ErrExpired", err)
	}
	mustRange(t, mustReadAll(t, mustSubscribe(t, st, "s", last-MaxEvents)), last-MaxEvents+1, last)
}

func testFinishedReplay(t *testing.T, st stream.Store) {
	mustCreate(t, st, "s")
	mustAppend(t, st, "s", 1, 5)
	mustFinish(t, st, "s")
	mustRange(t, mustReadAll(t, mustSubscribe(t, st, "s", 0)), 1, 5)
	mustRange(t, mustReadAll(t, mustSubscribe(t, st, "s", 3)), 4, 5)

	// Caught up on a finished stream: the first Fetch already says done
	// (the handler answers 204 so EventSource stops reconnecting).
	recs, done, err := mustSubscribe(t, st, "s", 5).Fetch(nil)
	if err != nil || !done || len(recs) != 0 {
		t.Fatalf("first fetch at the end = %d records, done %v, err %v; want 0, true, nil", len(recs), done, err)
	}
}

func testFetchNeverBlocks(t *testing.T, st stream.Store) {
	mustCreate(t, st, "s")
	mustAppend(t, st, "s", 1, 3)
	sub := mustSubscribe(t, st, "s", 3) // caught up on a live stream: nothing to fetch
	returned := make(chan error, 1)
	go func() {
		for range 100 {
			if _, done, err := sub.Fetch(nil); err != nil || done {
				returned <- fmt.Errorf("fetch on a live stream: done %v, err %v", done, err)
				return
			}
		}
		returned <- nil
	}()
	select {
	case err := <-returned:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait):
		t.Fatal("Fetch blocked")
	}
}

func testReadyWakes(t *testing.T, st stream.Store) {
	mustCreate(t, st, "s")
	sub := mustSubscribe(t, st, "s", 0)
	if recs, done, err := sub.Fetch(nil); len(recs) != 0 || done || err != nil {
		t.Fatalf("fetch on an empty live stream = %d records, done %v, err %v", len(recs), done, err)
	}
	got := make(chan []stream.Record, 1)
	go func() {
		var recs []stream.Record
		deadline := time.After(wait)
		for len(recs) == 0 {
			select {
			case <-sub.Ready():
			case <-deadline:
				got <- nil
				return
			}
			recs, _, _ = sub.Fetch(recs)
		}
		got <- recs
	}()
	mustAppend(t, st, "s", 1, 1)
	recs := <-got
	if len(recs) == 0 {
		t.Fatal("waiting reader not woken by an append")
	}
	mustRange(t, recs, 1, 1)
}

func testSeveralReaders(t *testing.T, st stream.Store) {
	mustCreate(t, st, "s")
	mustAppend(t, st, "s", 1, 10)
	afters := []int64{0, 3, 7, 10}
	subs := make([]stream.Subscription, len(afters))
	for i, a := range afters {
		subs[i] = mustSubscribe(t, st, "s", a)
	}
	var wg sync.WaitGroup
	got := make([][]stream.Record, len(subs))
	errs := make([]error, len(subs))
	for i, sub := range subs {
		wg.Go(func() { got[i], errs[i] = ReadAll(sub) })
	}
	if err := appendRange(st, "s", 11, MaxEvents); err != nil {
		t.Fatal(err)
	}
	mustFinish(t, st, "s")
	wg.Wait()
	for i, a := range afters {
		if errs[i] != nil {
			t.Errorf("reader after %d: %v", a, errs[i])
		} else if err := CheckRange(got[i], a+1, MaxEvents); err != nil {
			t.Errorf("reader after %d: %v", a, err)
		}
	}
}

func testSlowReader(t *testing.T, st stream.Store) {
	const last = 10 * MaxEvents
	mustCreate(t, st, "s")
	slow := mustSubscribe(t, st, "s", 0) // never reads while the stream grows
	appended := make(chan error, 1)
	go func() {
		err := appendRange(st, "s", 1, last)
		if err == nil {
			err = st.Finish(context.Background(), "s")
		}
		appended <- err
	}()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait):
		t.Fatal("Append blocked behind a reader that does not read")
	}
	// Another reader is unaffected.
	mustRange(t, mustReadAll(t, mustSubscribe(t, st, "s", last-3)), last-2, last)

	// The slow reader either got a contiguous prefix and then ErrExpired
	// (the window moved past it), or everything; never a hole.
	recs, err := ReadAll(slow)
	switch {
	case errors.Is(err, stream.ErrExpired):
		if len(recs) > 0 {
			if err := CheckRange(recs, 1, recs[len(recs)-1].Seq); err != nil {
				t.Fatalf("before ErrExpired: %v", err)
			}
		}
	case err != nil:
		t.Fatalf("slow reader: %v", err)
	default:
		mustRange(t, recs, 1, last)
	}
}

func testRejectedAppends(t *testing.T, st stream.Store) {
	ctx := context.Background()
	mustCreate(t, st, "s")
	if err := st.Append(ctx, "s", Rec(2)); err == nil {
		t.Error("append with a seq gap accepted")
	}
	mustAppend(t, st, "s", 1, 2)
	if err := st.Append(ctx, "s", Rec(2)); err == nil {
		t.Error("append of a seq twice accepted")
	}
	mustFinish(t, st, "s")
	if err := st.Append(ctx, "s", Rec(3)); err == nil {
		t.Error("append after finish accepted")
	}
	mustRange(t, mustReadAll(t, mustSubscribe(t, st, "s", 0)), 1, 2)
}

func testCloseEndsReaders(t *testing.T, st stream.Store) {
	ctx := context.Background()
	mustCreate(t, st, "s")
	mustAppend(t, st, "s", 1, 2)
	sub := mustSubscribe(t, st, "s", 0)
	if err := st.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	_, err := ReadAll(sub)
	if !errors.Is(err, stream.ErrClosed) {
		t.Fatalf("reader after close: err = %v, want ErrClosed", err)
	}
	if _, err := st.Subscribe(ctx, "s", 0); !errors.Is(err, stream.ErrClosed) {
		t.Errorf("subscribe after close: err = %v, want ErrClosed", err)
	}
	if err := st.Append(ctx, "s", Rec(3)); !errors.Is(err, stream.ErrClosed) {
		t.Errorf("append after close: err = %v, want ErrClosed", err)
	}
}
