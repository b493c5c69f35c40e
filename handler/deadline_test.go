package handler

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineRecorder is a response writer that records the write deadlines
// set on it.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	set []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.set = append(d.set, t)
	return nil
}

// A stream's writes keep the deadline about the write timeout ahead
// without moving it for every frame: the first write moves it, the
// frames that follow within a thirty-second of the timeout do not.
func TestWriteDeadlineMovesOnlyWhenItFellBehind(t *testing.T) {
	w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	d := writeDeadline{rc: http.NewResponseController(w), timeout: time.Hour}
	before := time.Now()
	for range 100 {
		d.renew()
	}
	if len(w.set) != 1 {
		t.Fatalf("100 writes moved the deadline %d times, want once", len(w.set))
	}
	if min := before.Add(time.Hour * 31 / 32); w.set[0].Before(min) {
		t.Fatalf("deadline %v, want at least %v", w.set[0], min)
	}

	d.set = d.set.Add(-time.Hour / 32) // as if the last move was a thirty-second of the timeout ago
	d.renew()
	if len(w.set) != 2 {
		t.Fatalf("a deadline a thirty-second behind was not moved (%d moves)", len(w.set))
	}

	off := writeDeadline{rc: http.NewResponseController(w), timeout: 0}
	off.renew()
	if len(w.set) != 2 {
		t.Fatal("a zero timeout set a deadline")
	}
}
