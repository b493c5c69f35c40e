package jobs

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type outcomes struct {
	mu  sync.Mutex
	got []string
}

func (o *outcomes) observe(kind, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, kind+":"+outcome)
}

func (o *outcomes) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.got...)
}

func TestJobsRunBoundedAndReportHowTheyEnded(t *testing.T) {
	var o outcomes
	r := New(2, nil, o.observe)
	release := make(chan struct{})
	hold := func(ctx context.Context) error { <-release; return nil }
	a, err1 := r.Go("title", hold)
	b, err2 := r.Go("title", func(ctx context.Context) error { <-release; return errors.New("model down") })
	if err1 != nil || err2 != nil {
		t.Fatalf("Go: %v, %v", err1, err2)
	}
	if _, err := r.Go("compaction", hold); !errors.Is(err, ErrRefused) {
		t.Fatalf("a third job while two run: %v, want ErrRefused", err)
	}
	close(release)
	<-a.Done()
	<-b.Done()
	if a.Err() != nil || b.Err() == nil {
		t.Fatalf("Err = %v, %v", a.Err(), b.Err())
	}
	c, err := r.Go("compaction", func(ctx context.Context) error { panic("bug") })
	if err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if c.Err() == nil {
		t.Fatal("a panicking job reported no error")
	}
	r.Close(context.Background())
	got := o.list()
	want := map[string]int{"compaction:refused": 1, "title:done": 1, "title:failed": 1, "compaction:failed": 1}
	for _, g := range got {
		want[g]--
	}
	for k, n := range want {
		if n != 0 {
			t.Fatalf("outcomes %v: %s off by %d", got, k, n)
		}
	}
}

func TestCloseCancelsRunningJobsAfterItsGraceAndRefusesNewOnes(t *testing.T) {
	var o outcomes
	r := New(4, nil, o.observe)
	started := make(chan struct{})
	j, err := r.Go("compaction", func(ctx context.Context) error { close(started); <-ctx.Done(); return ctx.Err() })
	if err != nil {
		t.Fatal(err)
	}
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace
	r.Close(ctx)
	select {
	case <-j.Done():
	default:
		t.Fatal("Close returned before the job")
	}
	if _, err := r.Go("title", func(context.Context) error { return nil }); !errors.Is(err, ErrRefused) {
		t.Fatalf("Go after Close: %v", err)
	}
	if got := o.list(); len(got) != 2 || got[0] != "compaction:canceled" || got[1] != "title:refused" {
		t.Fatalf("outcomes %v", got)
	}
}
