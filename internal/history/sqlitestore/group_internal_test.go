package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// queueWrites starts a write that holds the writer until release is
// closed, then n more that must queue behind it; it returns once all n
// are queued, and a function waiting for every outcome.
func queueWrites(t *testing.T, s *Store, release chan struct{}, fns []writeFunc) func() []error {
	t.Helper()
	var wg sync.WaitGroup
	started := make(chan struct{})
	wg.Go(func() {
		_ = s.write(context.Background(), func(*sql.Tx, time.Time) error {
			close(started)
			<-release
			return nil
		})
	})
	<-started
	errs := make([]error, len(fns))
	for i, fn := range fns {
		wg.Go(func() { errs[i] = s.write(context.Background(), fn) })
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		s.group.mu.Lock()
		n := len(s.group.queue)
		s.group.mu.Unlock()
		if n == len(fns) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", n, len(fns))
		}
		time.Sleep(time.Millisecond)
	}
	return func() []error { close(release); wg.Wait(); return errs }
}

func openGroupStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.write(context.Background(), func(tx *sql.Tx, _ time.Time) error {
		_, err := tx.Exec(`CREATE TABLE t (k TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func insert(k string) writeFunc {
	return func(tx *sql.Tx, _ time.Time) error {
		_, err := tx.Exec(`INSERT INTO t (k) VALUES (?)`, k)
		return err
	}
}

func keys(t *testing.T, s *Store) map[string]bool {
	t.Helper()
	rows, err := s.writer.Query(`SELECT k FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		got[k] = true
	}
	return got
}

func TestQueuedWritesCommitTogetherAndAFailingOneIsUndoneAlone(t *testing.T) {
	s := openGroupStore(t)
	if err := s.write(context.Background(), insert("dup")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	var fns []writeFunc
	for i := range 10 {
		fns = append(fns, insert(fmt.Sprint("k", i)))
	}
	fns = append(fns, func(tx *sql.Tx, now time.Time) error { // writes, then fails: undone alone
		if err := insert("bad")(tx, now); err != nil {
			return err
		}
		return boom
	}, insert("dup")) // a duplicate: its own error, nothing else lost
	wait := queueWrites(t, s, make(chan struct{}), fns)
	errs := wait()
	for i := range 10 {
		if errs[i] != nil {
			t.Errorf("write k%d: %v", i, errs[i])
		}
	}
	if !errors.Is(errs[10], boom) {
		t.Errorf("failing write returned %v, want boom", errs[10])
	}
	if errs[11] == nil {
		t.Error("a duplicate key was accepted")
	}
	got := keys(t, s)
	if len(got) != 11 || got["bad"] {
		t.Errorf("rows %v: want dup, k0..k9 and not the failed write's", got)
	}
	if s.group.batches != 1 || s.group.batched != len(fns) {
		t.Errorf("%d batches of %d writes; want the %d queued writes in one transaction", s.group.batches, s.group.batched, len(fns))
	}

	// A caller whose context ends while it waits in the queue is left
	// out; the others are not.
	if err := s.write(cancelled, insert("never")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled write: %v", err)
	}
}

func TestABatchWhoseTransactionBreaksRunsEachWriteAlone(t *testing.T) {
	s := openGroupStore(t)
	fns := []writeFunc{
		insert("a"),
		func(tx *sql.Tx, _ time.Time) error { // ends the shared transaction under everyone's feet
			_, err := tx.Exec(`ROLLBACK`)
			return err
		},
		insert("b"),
	}
	errs := queueWrites(t, s, make(chan struct{}), fns)()
	if errs[0] != nil || errs[2] != nil {
		t.Errorf("the well-behaved writes failed: %v, %v", errs[0], errs[2])
	}
	if errs[1] == nil {
		t.Error("the write that rolled back the transaction reported success")
	}
	if got := keys(t, s); !got["a"] || !got["b"] || len(got) != 2 {
		t.Errorf("rows %v, want a and b", got)
	}
}
