package vectorindex

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func seqs(hits []Hit) []int64 {
	out := make([]int64, len(hits))
	for i, h := range hits {
		out[i] = h.Seq
	}
	return out
}

func TestSearchRanksByCosineWithinTheTenant(t *testing.T) {
	t.Parallel()
	var x Index
	x.Add("acme", 1, []float32{1, 0})
	x.Add("acme", 2, []float32{3, 3})    // 45°: ~0.707
	x.Add("acme", 3, []float32{0, 2})    // 90°: 0, left out
	x.Add("acme", 4, []float32{-1, 0})   // opposite, left out
	x.Add("acme", 5, []float32{1, 0, 0}) // other dimension, left out
	x.Add("acme", 6, []float32{10, 0.5}) // nearly along the query
	x.Add("globex", 7, []float32{1, 0})  // another tenant's
	x.Add("acme", 8, []float32{0, 0})    // zero: never stored
	x.Add("acme", 9, []float32{float32(math.NaN()), 1})

	cases := []struct {
		name   string
		tenant string
		q      []float32
		limit  int
		want   []int64
	}{
		{"best first", "acme", []float32{2, 0}, 10, []int64{1, 6, 2}},
		{"limit keeps the best", "acme", []float32{2, 0}, 2, []int64{1, 6}},
		{"other tenant", "globex", []float32{1, 0}, 10, []int64{7}},
		{"unknown tenant", "initech", []float32{1, 0}, 10, nil},
		{"zero limit", "acme", []float32{1, 0}, 0, nil},
		{"zero query", "acme", []float32{0, 0}, 10, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := x.Search(c.tenant, Normalize(c.q), c.limit)
			if !slices.Equal(seqs(got), c.want) {
				t.Errorf("Search = %v, want seqs %v", got, c.want)
			}
			for i := 1; i < len(got); i++ {
				if got[i].Score > got[i-1].Score {
					t.Errorf("hits out of order: %v", got)
				}
			}
		})
	}
	if got := x.Search("acme", Normalize([]float32{1, 0}), 1); len(got) != 1 || math.Abs(got[0].Score-1) > 1e-6 {
		t.Errorf("score of an identical direction = %v, want 1", got)
	}
}

func TestEqualScoresRankByLowerSeq(t *testing.T) {
	t.Parallel()
	var x Index
	for _, seq := range []int64{9, 3, 7, 1, 5} {
		x.Add("t", seq, []float32{1, 1})
	}
	if got := seqs(x.Search("t", Normalize([]float32{1, 1}), 3)); !slices.Equal(got, []int64{1, 3, 5}) {
		t.Errorf("Search = %v, want [1 3 5]", got)
	}
}

func TestAddAgainReplacesTheVector(t *testing.T) {
	t.Parallel()
	var x Index
	x.Add("t", 1, []float32{1, 0})
	x.Add("t", 1, []float32{0, 1})
	if got := x.Search("t", Normalize([]float32{1, 0}), 10); len(got) != 0 {
		t.Errorf("old vector still found: %v", got)
	}
	if got := seqs(x.Search("t", Normalize([]float32{0, 1}), 10)); !slices.Equal(got, []int64{1}) {
		t.Errorf("Search = %v, want [1] once", got)
	}
}

func TestAddKeepsItsOwnCopy(t *testing.T) {
	t.Parallel()
	var x Index
	v := []float32{1, 0}
	x.Add("t", 1, v)
	v[0], v[1] = 0, 1
	if got := seqs(x.Search("t", Normalize([]float32{1, 0}), 10)); !slices.Equal(got, []int64{1}) {
		t.Errorf("Search after the caller changed its slice = %v, want [1]", got)
	}
}

func TestRemoveDropsOnlyTheGivenSeqs(t *testing.T) {
	t.Parallel()
	var x Index
	for seq := range int64(6) {
		x.Add("t", seq, []float32{1, float32(seq) / 10})
	}
	x.Add("other", 2, []float32{1, 0})
	x.Remove("t", []int64{0, 4, 4, 99}) // repeats and unknown seqs are ignored
	x.Remove("nobody", []int64{1})
	q := Normalize([]float32{1, 0})
	got := seqs(x.Search("t", q, 10))
	slices.Sort(got)
	if !slices.Equal(got, []int64{1, 2, 3, 5}) {
		t.Errorf("after Remove, seqs = %v, want [1 2 3 5]", got)
	}
	if got := seqs(x.Search("other", q, 10)); !slices.Equal(got, []int64{2}) {
		t.Errorf("another tenant's seq 2 = %v, want kept", got)
	}
	// What is left still maps seq to the right vector after the swaps.
	x.Add("t", 5, []float32{-1, 0})
	got = seqs(x.Search("t", q, 10))
	slices.Sort(got)
	if !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("after replacing 5, seqs = %v, want [1 2 3]", got)
	}

	x.Remove("t", []int64{1, 2, 3, 5})
	x.mu.RLock()
	_, kept := x.tenants["t"]
	x.mu.RUnlock()
	if kept {
		t.Error("a tenant with no vectors left is still in the index")
	}
}

// TestSearchMatchesBruteForce: the heap keeps exactly the best limit.
func TestSearchMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func(dims int) []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	var x Index
	vecs := map[int64][]float32{}
	for seq := range int64(500) {
		v := vec(7)
		x.Add("t", seq, v)
		vecs[seq] = Normalize(v)
	}
	for range 50 {
		q := Normalize(vec(7))
		var want []Hit
		for seq, v := range vecs {
			if s := float64(dot(q, v)); s > 0 {
				want = append(want, Hit{seq, s})
			}
		}
		slices.SortFunc(want, func(a, b Hit) int { return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Seq, b.Seq)) })
		for _, limit := range []int{1, 5, 20, 1000} {
			got := x.Search("t", q, limit)
			if w := want[:min(limit, len(want))]; !slices.Equal(got, w) {
				t.Fatalf("limit %d: Search = %v, want %v", limit, got, w)
			}
		}
	}
}

func TestReplaceSwapsInTheSnapshotAndItsVersion(t *testing.T) {
	t.Parallel()
	var x Index
	x.Add("t", 1, []float32{1, 0})
	x.SetVersion(3)

	var snap Snapshot
	snap.Add("t", 2, []float32{1, 0})
	snap.Add("t", 3, []float32{0, 0}) // left out, as by Index.Add
	snap.Add("u", 4, []float32{1, 0})
	x.Replace(7, &snap)

	if v := x.Version(); v != 7 {
		t.Errorf("Version = %d, want 7", v)
	}
	q := Normalize([]float32{1, 0})
	if got := seqs(x.Search("t", q, 10)); !slices.Equal(got, []int64{2}) {
		t.Errorf("tenant t after Replace = %v, want [2]", got)
	}
	if got := seqs(x.Search("u", q, 10)); !slices.Equal(got, []int64{4}) {
		t.Errorf("tenant u after Replace = %v, want [4]", got)
	}

	x.Replace(8, &Snapshot{}) // an empty store
	if got := x.Search("t", q, 10); got != nil {
		t.Errorf("after an empty Replace, Search = %v", got)
	}
	x.Add("t", 5, []float32{1, 0})
	if got := seqs(x.Search("t", q, 10)); !slices.Equal(got, []int64{5}) {
		t.Errorf("Add after an empty Replace: Search = %v, want [5]", got)
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		name string
		in   []float32
		want []float32
	}{
		{"scaled", []float32{3, 4}, []float32{0.6, 0.8}},
		{"unit already", []float32{0, 1}, []float32{0, 1}},
		{"empty", nil, nil},
		{"zero", []float32{0, 0}, nil},
		{"NaN", []float32{float32(math.NaN()), 1}, nil},
		{"Inf", []float32{inf, 1}, nil},
		{"overflowing float32 squares", []float32{1.8e38, 2.4e38}, []float32{0.6, 0.8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := slices.Clone(c.in)
			got := Normalize(in)
			if (got == nil) != (c.want == nil) || len(got) != len(c.want) {
				t.Fatalf("Normalize(%v) = %v, want %v", c.in, got, c.want)
			}
			for i := range got {
				if math.Abs(float64(got[i]-c.want[i])) > 1e-6 {
					t.Errorf("Normalize(%v) = %v, want %v", c.in, got, c.want)
				}
			}
			sameBits := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) } // NaN too
			if !slices.EqualFunc(in, c.in, sameBits) {
				t.Errorf("Normalize changed its argument to %v", in)
			}
		})
	}
}

func TestDotHandlesEveryRemainder(t *testing.T) {
	t.Parallel()
	for n := range 10 {
		a, b := make([]float32, n), make([]float32, n+3) // b may be longer
		var want float32
		for i := range n {
			a[i], b[i] = float32(i+1), float32(2*i-3)
			want += a[i] * b[i]
		}
		if got := dot(a, b); got != want {
			t.Errorf("dot of length %d = %v, want %v", n, got, want)
		}
	}
}

// store stands for a database: its version, and a count of reloads.
type store struct {
	mu      sync.Mutex // the store's write lock
	version int64
	reads   int
	reloads int
	x       *Index
}

func (s *store) readVersion(context.Context) (int64, error) {
	s.reads++
	return s.version, nil
}

func (s *store) reload(context.Context) error {
	s.reloads++
	s.x.Replace(s.version, &Snapshot{})
	return nil
}

func TestSyncReloadsOnlyWhenTheVersionMoved(t *testing.T) {
	t.Parallel()
	var x Index
	s := &store{x: &x}
	ctx := t.Context()
	if err := x.Sync(ctx, &s.mu, s.readVersion, s.reload); err != nil || s.reloads != 0 || s.reads != 1 {
		t.Errorf("in step: Sync = %v, %d reloads, %d reads; want none and one read", err, s.reloads, s.reads)
	}
	s.version = 4 // another process wrote
	if err := x.Sync(ctx, &s.mu, s.readVersion, s.reload); err != nil || s.reloads != 1 {
		t.Errorf("behind: Sync = %v, %d reloads; want 1", err, s.reloads)
	}
	if x.Version() != 4 {
		t.Errorf("Version after Sync = %d, want 4", x.Version())
	}
	if err := x.Sync(ctx, &s.mu, s.readVersion, s.reload); err != nil || s.reloads != 1 {
		t.Errorf("in step again: Sync = %v, %d reloads; want still 1", err, s.reloads)
	}
}

// TestSyncWaitsForAWriteBetweenCommitAndApply: a write of this process
// that committed but has not updated the index yet holds the write lock;
// Sync waits for it and then finds the index current, without a reload.
func TestSyncWaitsForAWriteBetweenCommitAndApply(t *testing.T) {
	t.Parallel()
	var x Index
	s := &store{x: &x}
	s.mu.Lock() // the write holds the lock from before its commit
	s.version = 1
	versionRead := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- x.Sync(t.Context(), &s.mu, func(ctx context.Context) (int64, error) {
			if s.reads++; s.reads == 1 {
				close(versionRead)
			}
			return s.version, nil
		}, s.reload)
	}()
	<-versionRead
	x.Add("t", 1, []float32{1}) // the write's apply, then its unlock
	x.SetVersion(1)
	s.mu.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s.reloads != 0 {
		t.Errorf("Sync reloaded %d times, want 0: the write kept the index current", s.reloads)
	}
}

func TestSyncReturnsTheVersionReadError(t *testing.T) {
	t.Parallel()
	var x Index
	boom := errors.New("boom")
	var mu sync.Mutex
	err := x.Sync(t.Context(), &mu, func(context.Context) (int64, error) { return 0, boom },
		func(context.Context) error { t.Error("reload called"); return nil })
	if !errors.Is(err, boom) {
		t.Errorf("Sync = %v, want %v", err, boom)
	}
}

func BenchmarkSearch10kVectors(b *testing.B) {
	const dims = 256
	rng := rand.New(rand.NewPCG(7, 11))
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	var x Index
	for seq := range int64(10_000) {
		x.Add("t", seq, vec())
	}
	queries := make([][]float32, 64)
	for i := range queries {
		queries[i] = Normalize(vec())
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		x.Search("t", queries[i%len(queries)], 20)
		i++
	}
}
