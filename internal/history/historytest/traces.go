package historytest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/history"
)

// traceTests cover history.TraceStore, which every store implements.
var traceTests = []test{
	{"TraceIsSavedReplacedAndReadByItsTenantOnly", func(t *testing.T, s history.Store) {
		ts := traceStore(t, s)
		ctx := t.Context()
		sess, err := s.CreateSession(ctx, history.Session{ID: "s1", TenantID: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		startTurn(t, s, sess.ID, "u1", "a1")
		if err := ts.SaveTrace(ctx, "a1", []byte(`{"v":1}`)); err != nil {
			t.Fatalf("SaveTrace: %v", err)
		}
		if err := ts.SaveTrace(ctx, "a1", []byte(`{"v": 2}`)); err != nil {
			t.Fatalf("SaveTrace again: %v", err)
		}
		rec, at, err := ts.GetTrace(ctx, "acme", "a1")
		var v struct{ V int }
		if err != nil || json.Unmarshal(rec, &v) != nil || v.V != 2 {
			t.Fatalf("GetTrace = %s, %v; want the second record", rec, err)
		}
		if d := time.Since(at); d < -timeSlack || d > timeSlack {
			t.Errorf("saved at %v, now %v", at, time.Now())
		}
		if _, _, err := ts.GetTrace(ctx, "beta", "a1"); !errors.Is(err, history.ErrNotFound) {
			t.Errorf("another tenant's GetTrace: %v, want ErrNotFound", err)
		}
		if err := ts.SaveTrace(ctx, "nobody", []byte(`{}`)); !errors.Is(err, history.ErrNotFound) {
			t.Errorf("SaveTrace of an unknown message: %v, want ErrNotFound", err)
		}
	}},
	{"TracesArePurgedByAgeAndDeletedWithTheirSession", func(t *testing.T, s history.Store) {
		ts := traceStore(t, s)
		ctx := t.Context()
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u1", "a1")
		startTurn(t, s, "s1", "u2", "a2")
		for _, id := range []string{"a1", "a2"} {
			if err := ts.SaveTrace(ctx, id, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := ts.PurgeTraces(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
			t.Fatalf("purge of nothing old: %d, %v", n, err)
		}
		if err := s.DeleteSession(ctx, "s1"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ts.GetTrace(ctx, "", "a1"); !errors.Is(err, history.ErrNotFound) {
			t.Errorf("trace of a deleted session's answer: %v", err)
		}
		createSession(t, s, "s2")
		startTurn(t, s, "s2", "u3", "a3")
		if err := ts.SaveTrace(ctx, "a3", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if n, err := ts.PurgeTraces(ctx, time.Now().Add(timeSlack)); err != nil || n != 1 {
			t.Fatalf("purge of everything: %d, %v; want 1", n, err)
		}
		if _, _, err := ts.GetTrace(ctx, "", "a3"); !errors.Is(err, history.ErrNotFound) {
			t.Errorf("a purged trace: %v", err)
		}
	}},
}

func traceStore(t *testing.T, s history.Store) history.TraceStore {
	t.Helper()
	ts, ok := s.(history.TraceStore)
	if !ok {
		t.Fatalf("%T does not implement history.TraceStore", s)
	}
	return ts
}
