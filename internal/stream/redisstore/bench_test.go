package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/stream"
	"github.com/chatpipe/chatpipe/internal/stream/redisstore"
	"github.com/chatpipe/chatpipe/internal/stream/redisstore/redistest"
)

// delta is an answer.delta record as the recorder encodes it: a uuid
// stream id, a millisecond timestamp and a short token.
func delta(id string, seq int64) stream.Record {
	ev := eventbus.Delta(eventbus.TypeAnswerDelta, " token")
	ev.Seq, ev.StreamID, ev.Time = seq, id, time.Now().UnixMilli()
	data, err := eventbus.AppendJSON(nil, &ev)
	if err != nil {
		panic(err)
	}
	return stream.Record{Seq: seq, Type: string(ev.Type), Data: data}
}

// benchDeltas appends b.N deltas as streams of 1000, then waits for the
// store's queued work (flush), inside the timed region.
func benchDeltas(b *testing.B, st stream.Store, flushEach int, flush func() error) {
	ctx := context.Background()
	ids := make([]string, 64)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	recs := make([]stream.Record, 1000)
	for i := range recs {
		recs[i] = delta(ids[0], int64(i+1))
	}
	var (
		id       string
		n        int
		inAppend time.Duration // time spent in Append itself: the token path
	)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seq := int64(i%1000) + 1
		if seq == 1 {
			id = fmt.Sprintf("%s-%d", ids[(i/1000)%len(ids)], i/1000)
			if err := st.Create(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		err := st.Append(ctx, id, recs[seq-1])
		inAppend += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		n++
		if seq == 1000 {
			if err := st.Finish(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
		if flushEach > 0 && n%flushEach == 0 {
			if err := flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := flush(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(inAppend.Nanoseconds())/float64(b.N), "append-ns/delta")
}

// BenchmarkAppendDelta is the per-delta cost of the stream store, queued
// work included. redis/burst lets the writer batch freely (a stream of
// 1000 deltas is flushed at its end); redis/paced flushes after every
// delta, as when tokens arrive slower than a Redis round trip.
func BenchmarkAppendDelta(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		m := stream.NewMemory(stream.MemoryOptions{})
		defer m.Close()
		benchDeltas(b, m, 0, func() error { return nil })
	})
	for _, bc := range []struct {
		name      string
		flushEach int
	}{{"redis/burst", 1000}, {"redis/paced", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			s := redistest.Open(b, redisstore.Options{})
			hook := newCountingHook()
			s.Client().AddHook(hook)
			ctx := context.Background()
			benchDeltas(b, s, bc.flushEach, func() error { return s.Flush(ctx) })
			b.StopTimer()
			b.ReportMetric(float64(hook.cmds)/float64(b.N), "cmds/delta")
			b.ReportMetric(float64(hook.pipelines)/float64(b.N), "roundtrips/delta")
		})
	}
}

// BenchmarkReplay5000 is a reader resuming at the start of a finished
// stream of 5000 deltas: Subscribe, then Fetch until done.
func BenchmarkReplay5000(b *testing.B) {
	cfg := redistest.Config(b)
	cfg.QueueSize = 8192
	s := redistest.OpenConfig(b, cfg, redisstore.Options{})
	ctx := context.Background()
	id := uuid.NewString()
	_ = s.Create(ctx, id)
	for seq := int64(1); seq <= 5000; seq++ {
		if err := s.Append(ctx, id, delta(id, seq)); err != nil {
			b.Fatal(err)
		}
	}
	_ = s.Finish(ctx, id)
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var buf []stream.Record
	for b.Loop() {
		sub, err := s.Subscribe(ctx, id, 0)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			recs, done, err := sub.Fetch(buf[:0])
			if err != nil {
				b.Fatal(err)
			}
			n += len(recs)
			buf = recs
			if done {
				break
			}
			if len(recs) == 0 {
				<-sub.Ready()
			}
		}
		sub.Close()
		if n != 5000 {
			b.Fatalf("replayed %d events", n)
		}
	}
}

// BenchmarkRedisMemoryPerFinishedStream reports MEMORY USAGE (stream key
// plus meta key) of a finished stream of 1000 deltas.
func BenchmarkRedisMemoryPerFinishedStream(b *testing.B) {
	s := redistest.Open(b, redisstore.Options{})
	ctx := context.Background()
	var total, streams int64
	for b.Loop() {
		id := uuid.NewString()
		_ = s.Create(ctx, id)
		for seq := int64(1); seq <= 1000; seq++ {
			if err := s.Append(ctx, id, delta(id, seq)); err != nil {
				b.Fatal(err)
			}
		}
		_ = s.Finish(ctx, id)
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		for _, key := range []string{s.Prefix() + "stream:" + id, s.Prefix() + "stream:" + id + ":meta"} {
			n, err := s.Client().MemoryUsage(ctx, key, 0).Result()
			if err != nil {
				b.Fatal(err)
			}
			total += n
		}
		streams++
	}
	b.ReportMetric(float64(total)/float64(streams), "redis-bytes/stream")
	b.ReportMetric(float64(len(delta(uuid.NewString(), 1000).Data)), "json-bytes/delta")
}
