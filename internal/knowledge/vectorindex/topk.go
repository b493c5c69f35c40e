package vectorindex

// topK is a min-heap of the best candidates seen so far: its root is the
// worst kept, replaced when a better one arrives.
type topK []Hit

// worse orders worse first: lower score, then (for determinism) higher
// seq.
func worse(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.Seq > b.Seq
}

// offer keeps c if it is among the best limit seen so far.
func (h *topK) offer(c Hit, limit int) {
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
	t.siftDown()
}

// sorted empties the heap into a slice, best first.
func (h *topK) sorted() []Hit {
	t := *h
	out := make([]Hit, len(t))
	for k := len(t) - 1; k >= 0; k-- {
		out[k] = t[0]
		last := len(t) - 1
		t[0] = t[last]
		t = t[:last]
		t.siftDown()
	}
	*h = nil
	return out
}

// siftDown restores the heap after its root changed.
func (t topK) siftDown() {
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
