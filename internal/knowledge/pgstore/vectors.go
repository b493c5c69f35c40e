package pgstore

// The in-memory vector index is the SQLite store's (sqlitestore/vectors.go),
// copied as it is unexported there; only loading it differs. Each replica
// keeps its own copy and reloads it whenever the store's version moved
// without it (another replica wrote).

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/jackc/pgx/v5"
)

// vectorIndex is the in-memory copy of the chunk embeddings, scaled to
// unit length so that cosine similarity is a dot product, kept apart per
// tenant so that a query scans its tenant's vectors only. A query scans
// them exactly: at the sizes an embedded knowledge base has (tens of
// thousands of chunks) that takes milliseconds, and it needs no
// approximate index to build or tune.
type vectorIndex struct {
	mu      sync.RWMutex
	version int64                 // the store version it reflects
	tenants map[string]*vectorSet // tenant id -> its vectors; no empty sets
}

// vectorSet is one tenant's vectors.
type vectorSet struct {
	seqs []int64
	vecs [][]float32
	pos  map[int64]int // seq -> position in seqs and vecs
}

// scored is a chunk's similarity to a query.
type scored struct {
	seq   int64
	score float64
}

func (x *vectorIndex) setVersion(v int64) {
	x.mu.Lock()
	x.version = v
	x.mu.Unlock()
}

func (x *vectorIndex) currentVersion() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.version
}

// add stores v (copied, normalised) for seq of the tenant; a zero vector
// is left out.
func (x *vectorIndex) add(tenantID string, seq int64, v []float32) {
	u := normalize(v)
	if u == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.tenants == nil {
		x.tenants = make(map[string]*vectorSet)
	}
	set := x.tenants[tenantID]
	if set == nil {
		set = &vectorSet{pos: make(map[int64]int)}
		x.tenants[tenantID] = set
	}
	set.add(seq, u)
}

func (set *vectorSet) add(seq int64, u []float32) {
	if i, ok := set.pos[seq]; ok {
		set.vecs[i] = u
		return
	}
	set.pos[seq] = len(set.seqs)
	set.seqs = append(set.seqs, seq)
	set.vecs = append(set.vecs, u)
}

// remove drops the tenant's vectors of seqs (swap with the last).
func (x *vectorIndex) remove(tenantID string, seqs []int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	set := x.tenants[tenantID]
	if set == nil {
		return
	}
	for _, seq := range seqs {
		i, ok := set.pos[seq]
		if !ok {
			continue
		}
		last := len(set.seqs) - 1
		set.seqs[i], set.vecs[i] = set.seqs[last], set.vecs[last]
		set.pos[set.seqs[i]] = i
		set.seqs, set.vecs = set.seqs[:last], set.vecs[:last]
		delete(set.pos, seq)
	}
	if len(set.seqs) == 0 {
		delete(x.tenants, tenantID)
	}
}

// replace swaps in a freshly loaded copy.
func (x *vectorIndex) replace(version int64, tenants map[string]*vectorSet) {
	x.mu.Lock()
	x.version, x.tenants = version, tenants
	x.mu.Unlock()
}

// search returns up to limit seqs of the tenant whose vectors have the
// same dimension as u (unit length, see normalize) and a positive
// similarity to it, most similar first (ties by seq).
func (x *vectorIndex) search(tenantID string, u []float32, limit int) []scored {
	if u == nil || limit <= 0 {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	set := x.tenants[tenantID]
	if set == nil {
		return nil
	}
	top := make(topK, 0, min(limit, len(set.seqs)))
	for i, v := range set.vecs {
		if len(v) != len(u) {
			continue
		}
		s := float64(dot(u, v))
		if s <= 0 {
			continue
		}
		top.offer(scored{set.seqs[i], s}, limit)
	}
	return top.sorted()
}

// topK is a min-heap of the best candidates seen so far: its root is the
// worst kept, replaced when a better one arrives.
type topK []scored

// less orders worse first: lower score, then (for determinism) higher seq.
func worse(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.seq > b.seq
}

func (h *topK) offer(c scored, limit int) {
	t := *h
	if len(t) < limit {
		t = append(t, c)
		for i := len(t) - 1; i > 0; { // sift up
			p := (i - 1) / 2
			if !worse(t[i], t[p]) {
				break
			}
			t[i], t[p] = t[p], t[i]
			i = p
		}
		*h = t
		return
	}
	if !worse(t[0], c) {
		return
	}
	t[0] = c
	for i := 0; ; { // sift down
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t) && worse(t[l], t[m]) {
			m = l
		}
		if r < len(t) && worse(t[r], t[m]) {
			m = r
		}
		if m == i {
			break
		}
		t[i], t[m] = t[m], t[i]
		i = m
	}
}

// sorted empties the heap into a slice, best first.
func (h *topK) sorted() []scored {
	t := *h
	out := make([]scored, len(t))
	for k := len(t) - 1; k >= 0; k-- {
		out[k] = t[0]
		last := len(t) - 1
		t[0] = t[last]
		t = t[:last]
		for i := 0; ; {
			l, r, m := 2*i+1, 2*i+2, i
			if l < len(t) && worse(t[l], t[m]) {
				m = l
			}
			if r < len(t) && worse(t[r], t[m]) {
				m = r
			}
			if m == i {
				break
			}
			t[i], t[m] = t[m], t[i]
			i = m
		}
	}
	*h = nil
	return out
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

// normalize returns v scaled to unit length, or nil for a zero vector or
// one holding NaN or Inf.
func normalize(v []float32) []float32 {
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

// reloadVectors replaces the in-memory copy with what the database holds.
func (s *Store) reloadVectors(ctx context.Context) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.reloadVectorsLocked(ctx)
}

func (s *Store) reloadVectorsLocked(ctx context.Context) error {
	// One snapshot for the version and the vectors.
	var (
		version int64
		tenants = make(map[string]*vectorSet)
	)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if version, err = readVersion(ctx, tx); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT seq, tenant_id, embedding FROM knowledge_chunks WHERE embedding IS NOT NULL`)
		if err != nil {
			return err
		}
		var (
			seq      int64
			tenantID string
			v        []float32
		)
		_, err = pgx.ForEachRow(rows, []any{&seq, &tenantID, &v}, func() error {
			u := normalize(v)
			if u == nil {
				return nil
			}
			set := tenants[tenantID]
			if set == nil {
				set = &vectorSet{pos: make(map[int64]int)}
				tenants[tenantID] = set
			}
			set.add(seq, u)
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("load embeddings: %w", err)
	}
	s.vectors.replace(version, tenants)
	return nil
}

// syncVectors reloads the in-memory copy when the version moved without
// it: another replica changed the knowledge base (this process's own
// writes keep it current). Checking costs one single-row read.
func (s *Store) syncVectors(ctx context.Context) error {
	v, err := readVersion(ctx, s.pool)
	if err != nil {
		return err
	}
	if v == s.vectors.currentVersion() {
		return nil
	}
	s.writeMu.Lock() // wait for a write of this process that is between commit and apply
	defer s.writeMu.Unlock()
	if v, err = readVersion(ctx, s.pool); err != nil {
		return err
	}
	if v == s.vectors.currentVersion() {
		return nil
	}
	return s.reloadVectorsLocked(ctx)
}
