package historytest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/history"
)

var partialTests = []test{
	{"SavePartialIsWhatACrashLeaves", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u1", "a1")
		for _, text := range []string{"The answer", "The answer so far"} {
			if err := s.SavePartial(t.Context(), "a1", text, "thinking "+text); err != nil {
				t.Fatalf("SavePartial(%q): %v", text, err)
			}
		}
		if m := getMessage(t, s, "a1"); m.Status != history.StatusStreaming || m.Content != "The answer so far" ||
			m.Thinking != "thinking The answer so far" {
			t.Fatalf("after SavePartial: %+v", m)
		}
		// The server dies here; the next start fails what was streaming.
		if n, err := s.FailAbandoned(t.Context(), "crashed", time.Now().Add(time.Hour)); err != nil || n != 1 {
			t.Fatalf("FailAbandoned = %d, %v", n, err)
		}
		m := getMessage(t, s, "a1")
		if m.Status != history.StatusFailed || m.Error != "crashed" || m.Content != "The answer so far" {
			t.Fatalf("after a crash: %+v; want failed with the partial answer", m)
		}
		recent, err := s.RecentMessages(t.Context(), "s1", "", 0)
		if err != nil || len(recent) != 2 {
			t.Fatalf("RecentMessages = %d messages, %v; a failed answer with text is history", len(recent), err)
		}
	}},
	{"SavePartialNeverChangesAFinishedMessage", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u1", "a1")
		finish(t, s, "a1", history.Final{Status: history.StatusStopped, Content: "final"})
		wantErr(t, "SavePartial after finish", s.SavePartial(t.Context(), "a1", "late", "late"), history.ErrAlreadyFinished)
		if m := getMessage(t, s, "a1"); m.Status != history.StatusStopped || m.Content != "final" || m.Thinking != "" {
			t.Fatalf("a late partial save changed the final message: %+v", m)
		}
		wantErr(t, "SavePartial(unknown)", s.SavePartial(t.Context(), "nope", "x", ""), history.ErrNotFound)
		wantErr(t, "SavePartial(user message)", s.SavePartial(t.Context(), "u1", "x", ""), history.ErrAlreadyFinished)
	}},
	{"ConcurrentPartialSavesNeverUndoTheFinalSave", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		for i := range 10 {
			id := fmt.Sprint("a", i)
			startTurn(t, s, "s1", fmt.Sprint("u", i), id)
			var wg sync.WaitGroup
			for j := range 4 {
				wg.Go(func() {
					err := s.SavePartial(t.Context(), id, fmt.Sprint("partial ", j), "")
					if err != nil {
						wantErr(t, "SavePartial racing FinishMessage", err, history.ErrAlreadyFinished)
					}
				})
			}
			wg.Go(func() { finish(t, s, id, history.Final{Status: history.StatusCompleted, Content: "final"}) })
			wg.Wait()
			if m := getMessage(t, s, id); m.Status != history.StatusCompleted || m.Content != "final" {
				t.Fatalf("message %s: %+v; the final save must win", id, m)
			}
		}
	}},
}
