package stream_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/stream"
	"github.com/chatpipe/chatpipe/internal/stream/redisstore"
	"github.com/chatpipe/chatpipe/internal/stream/redisstore/redistest"
	"github.com/chatpipe/chatpipe/internal/stream/streamtest"
)

func openMemory(t *testing.T) *stream.Memory {
	m := stream.NewMemory(stream.MemoryOptions{MaxEvents: streamtest.MaxEvents})
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func TestMemoryConformance(t *testing.T) {
	streamtest.Run(t, func(t *testing.T) stream.Store { return openMemory(t) })
}

// The generating replica: its readers are served by the local store.
func TestTieredConformance(t *testing.T) {
	redistest.Addr(t)
	streamtest.Run(t, func(t *testing.T) stream.Store {
		shared := redistest.Open(t, redisstore.Options{MaxEvents: streamtest.MaxEvents})
		return stream.NewTiered(openMemory(t), shared)
	})
}

// acrossReplicas writes through one replica's tiered store and reads
// through another's, which finds the streams only in Redis.
type acrossReplicas struct {
	stream.Store // the generating replica
	shared       *redisstore.Store
	reader       stream.Store
}

// Create returns once the stream is in Redis: a reader reaches another
// replica only after the stream was announced to its client. (Appends
// stay asynchronous.)
func (r acrossReplicas) Create(ctx context.Context, id string) error {
	if err := r.Store.Create(ctx, id); err != nil {
		return err
	}
	return r.shared.Flush(ctx)
}

func (r acrossReplicas) Subscribe(ctx context.Context, id string, after int64) (stream.Subscription, error) {
	return r.reader.Subscribe(ctx, id, after)
}

func (r acrossReplicas) Close() error { return errors.Join(r.Store.Close(), r.reader.Close()) }

func TestTieredAcrossReplicasConformance(t *testing.T) {
	redistest.Addr(t)
	streamtest.Run(t, func(t *testing.T) stream.Store {
		cfg := redistest.Config(t)
		opts := redisstore.Options{MaxEvents: streamtest.MaxEvents}
		shared := redistest.OpenConfig(t, cfg, opts)
		a := stream.NewTiered(openMemory(t), shared)
		b := stream.NewTiered(openMemory(t), redistest.OpenConfig(t, cfg, opts))
		return acrossReplicas{Store: a, shared: shared, reader: b}
	})
}

func TestTieredLocalReadersGetEverythingWhileSharedStoreIsDown(t *testing.T) {
	ctx := context.Background()
	shared, err := redisstore.Open(ctx, redisstore.RedisOptions{Addr: redistest.ClosedAddr(t), KeyPrefix: "down:", QueueSize: 64},
		redisstore.Options{})
	if err != nil {
		t.Fatalf("open with Redis down: %v", err)
	}
	local := stream.NewMemory(stream.MemoryOptions{})
	st := stream.NewTiered(local, shared)
	t.Cleanup(func() { _ = st.Close() })
	const last = 2000 // far more than the shared store's queue

	if err := st.Create(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	live, err := st.Subscribe(ctx, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	var (
		wg      sync.WaitGroup
		got     []stream.Record
		readErr error
	)
	wg.Go(func() { got, readErr = streamtest.ReadAll(live) })

	appended := make(chan error, 1)
	go func() {
		var sharedErr error
		for seq := int64(1); seq <= last; seq++ {
			err := st.Append(ctx, "s", streamtest.Rec(seq))
			switch {
			case err == nil:
			case errors.Is(err, redisstore.ErrBroken):
				sharedErr = err // in the local store all the same
			default:
				appended <- err
				return
			}
		}
		_ = st.Finish(ctx, "s") // the shared half fails: Redis is down
		if sharedErr == nil {
			t.Error("no append reported the shared store's loss")
		}
		appended <- nil
	}()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Append blocked on a shared store that is down")
	}
	wg.Wait()
	if readErr != nil {
		t.Fatalf("live reader: %v", readErr)
	}
	if err := streamtest.CheckRange(got, 1, last); err != nil {
		t.Fatalf("live reader: %v", err)
	}
	// A reader on another replica cannot know where the stream stands.
	if _, err := shared.Subscribe(ctx, "s", 0); !errors.Is(err, stream.ErrUnavailable) {
		t.Errorf("shared subscribe with Redis down: err = %v, want ErrUnavailable", err)
	}
	// A reader resuming on this replica replays from the local store.
	sub, err := st.Subscribe(ctx, "s", last/2)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	recs, err := streamtest.ReadAll(sub)
	if err != nil {
		t.Fatal(err)
	}
	if err := streamtest.CheckRange(recs, last/2+1, last); err != nil {
		t.Fatalf("resuming reader: %v", err)
	}
}
