// Package vectorindex is the knowledge stores' in-memory copy of the
// chunk embeddings: exact cosine search, kept apart per tenant, marked
// with the store version it reflects. A store loads it (Snapshot,
// Replace), applies its own writes to it (Add, Remove, SetVersion) and
// reloads it when another process moved the version (Sync). When its own
// write may advance the version is the store's call: see each store's
// write.
package vectorindex

import (
	"context"
	"math"
	"sync"
)

// Index holds the embeddings scaled to unit length, so that cosine
// similarity is a dot product, kept apart per tenant so that a query
// scans its tenant's vectors only. A query scans them exactly: at the
// sizes an embedded knowledge base has (tens of thousands of chunks) that
// takes milliseconds, and it needs no approximate index to build or tune.
// The zero value is empty, at version 0, and ready to use.
type Index struct {
	mu      sync.RWMutex
	version int64           // the store version it reflects
	tenants map[string]*set // tenant id -> its vectors; no empty sets
}

// set is one tenant's vectors.
type set struct {
	seqs []int64
	vecs [][]float32
	pos  map[int64]int // seq -> position in seqs and vecs
}

// Hit is a chunk's similarity to a query.
type Hit struct {
	Seq   int64
	Score float64
}

// Version returns the store version the index reflects.
func (x *Index) Version() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.version
}

// SetVersion records that the index reflects store version v.
func (x *Index) SetVersion(v int64) {
	x.mu.Lock()
	x.version = v
	x.mu.Unlock()
}

// Add stores v (copied, normalised) for seq of the tenant, replacing what
// seq had; a zero vector, or one holding NaN or Inf, is left out.
func (x *Index) Add(tenantID string, seq int64, v []float32) {
	u := Normalize(v)
	if u == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.tenants == nil {
		x.tenants = make(map[string]*set)
	}
	addTo(x.tenants, tenantID, seq, u)
}

// addTo stores the unit vector u for seq of the tenant in tenants.
func addTo(tenants map[string]*set, tenantID string, seq int64, u []float32) {
	s := tenants[tenantID]
	if s == nil {
		s = &set{pos: make(map[int64]int)}
		tenants[tenantID] = s
	}
	if i, ok := s.pos[seq]; ok {
		s.vecs[i] = u
		return
	}
	s.pos[seq] = len(s.seqs)
	s.seqs = append(s.seqs, seq)
	s.vecs = append(s.vecs, u)
}

// Remove drops the tenant's vectors of seqs; seqs it does not hold are
// ignored.
func (x *Index) Remove(tenantID string, seqs []int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.tenants[tenantID]
	if s == nil {
		return
	}
	for _, seq := range seqs {
		i, ok := s.pos[seq]
		if !ok {
			continue
		}
		// Swap with the last: order within a set does not matter.
		last := len(s.seqs) - 1
		s.seqs[i], s.vecs[i] = s.seqs[last], s.vecs[last]
		s.pos[s.seqs[i]] = i
		s.seqs, s.vecs = s.seqs[:last], s.vecs[:last]
		delete(s.pos, seq)
	}
	if len(s.seqs) == 0 {
		delete(x.tenants, tenantID)
	}
}

// Search returns up to limit chunks of the tenant whose vectors have the
// same dimension as u and a positive similarity to it, most similar
// first (ties by seq). u must be unit length (Normalize); nil finds
// nothing.
func (x *Index) Search(tenantID string, u []float32, limit int) []Hit {
	if u == nil || limit <= 0 {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := x.tenants[tenantID]
	if s == nil {
		return nil
	}
	top := make(topK, 0, min(limit, len(s.seqs)))
	for i, v := range s.vecs {
		if len(v) != len(u) {
			continue
		}
		score := float64(dot(u, v))
		if score <= 0 {
			continue
		}
		top.offer(Hit{s.seqs[i], score}, limit)
	}
	return top.sorted()
}

// Snapshot is a copy of the embeddings being read from the database, to
// be swapped in whole by Replace. The zero value is empty and ready to
// use; it is not safe for concurrent use.
type Snapshot struct {
	tenants map[string]*set
}

// Add is Index.Add on the snapshot.
func (s *Snapshot) Add(tenantID string, seq int64, v []float32) {
	u := Normalize(v)
	if u == nil {
		return
	}
	if s.tenants == nil {
		s.tenants = make(map[string]*set)
	}
	addTo(s.tenants, tenantID, seq, u)
}

// Replace swaps in snap, read at store version, for everything x held.
// snap must not be used afterwards.
func (x *Index) Replace(version int64, snap *Snapshot) {
	x.mu.Lock()
	x.version, x.tenants = version, snap.tenants
	x.mu.Unlock()
	snap.tenants = nil
}

// Sync brings x up to the store's version when it moved without x:
// another process wrote (a process's own writes keep its index current).
// version reads the store's version, which costs the store one
// single-row read. reload replaces the index with what the store holds;
// it runs with writes held, as does every write of the store from its
// commit to its update of x, so a write of this process that is between
// the two is waited for rather than taken for another process's.
func (x *Index) Sync(ctx context.Context, writes sync.Locker,
	version func(context.Context) (int64, error), reload func(context.Context) error) error {
	v, err := version(ctx)
	if err != nil {
		return err
	}
	if v == x.Version() {
		return nil
	}
	writes.Lock()
	defer writes.Unlock()
	if v, err = version(ctx); err != nil {
		return err
	}
	if v == x.Version() {
		return nil
	}
	return reload(ctx)
}

// Normalize returns v scaled to unit length, or nil for a zero vector or
// one holding NaN or Inf.
func Normalize(v []float32) []float32 {
	var sum float64
	for _, f := range v {
		sum += float64(f) * float64(f)
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return nil
	}
	inv := 1 / math.Sqrt(sum)
	u := make([]float32, len(v))
	for i, f := range v {
		u[i] = float32(float64(f) * inv)
	}
	return u
}

// dot is the inner product of two vectors of equal length, in four
// independent sums so the additions overlap.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
