package historytest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/chatpipe/chatpipe/internal/history"
)

var concurrencyTests = []test{
	{"ConcurrentFinishMessageHasExactlyOneWinner", func(t *testing.T, s history.Store) {
		const racers = 20
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u1", "a1")

		start := make(chan struct{})
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				<-start
				errs[i] = s.FinishMessage(t.Context(), "a1", history.Final{
					Status:  []string{history.StatusCompleted, history.StatusStopped, history.StatusFailed}[i%3],
					Content: fmt.Sprintf("racer %d", i)})
			})
		}
		close(start)
		wg.Wait()

		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("racers %d and %d both finished the message", winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, history.ErrAlreadyFinished):
				t.Errorf("racer %d: err = %v, want nil or %v", i, err, history.ErrAlreadyFinished)
			}
		}
		if winner < 0 {
			t.Fatal("no racer finished the message")
		}
		if got, want := getMessage(t, s, "a1").Content, fmt.Sprintf("racer %d", winner); got != want {
			t.Errorf("saved content = %q, want the winner's %q", got, want)
		}
	}},
	{"ConcurrentWritersOnDifferentSessionsAllSucceed", func(t *testing.T, s history.Store) {
		const sessions, turns = 8, 10
		for i := range sessions {
			createSession(t, s, fmt.Sprintf("s%d", i))
		}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			errList []error
			stop    = make(chan struct{})
			readers sync.WaitGroup
		)
		fail := func(err error) {
			mu.Lock()
			defer mu.Unlock()
			errList = append(errList, err)
		}
		// Readers run alongside the writers: reads must neither fail nor
		// see a half-written turn.
		for i := range 2 {
			readers.Go(func() {
				sid := fmt.Sprintf("s%d", i)
				for {
					select {
					case <-stop:
						return
					default:
					}
					msgs, err := s.ListMessages(t.Context(), sid)
					if err != nil {
						fail(fmt.Errorf("reader ListMessages: %w", err))
						return
					}
					if len(msgs)%2 != 0 {
						fail(fmt.Errorf("reader saw %d messages: half a turn", len(msgs)))
						return
					}
					if _, err := s.ListSessions(t.Context(), "", 0, 0); err != nil {
						fail(fmt.Errorf("reader ListSessions: %w", err))
						return
					}
				}
			})
		}
		for i := range sessions {
			wg.Go(func() {
				sid := fmt.Sprintf("s%d", i)
				for j := range turns {
					uid, aid := fmt.Sprintf("%s-u%d", sid, j), fmt.Sprintf("%s-a%d", sid, j)
					if _, _, err := s.StartTurn(t.Context(), sid, history.Message{ID: uid, Content: "q"}, aid); err != nil {
						fail(fmt.Errorf("StartTurn %s: %w", uid, err))
						return
					}
					if err := s.FinishMessage(t.Context(), aid, history.Final{Status: history.StatusCompleted, Content: "a"}); err != nil {
						fail(fmt.Errorf("FinishMessage %s: %w", aid, err))
						return
					}
				}
			})
		}
		wg.Wait()
		close(stop)
		readers.Wait()
		for _, err := range errList {
			t.Error(err)
		}

		for i := range sessions {
			sid := fmt.Sprintf("s%d", i)
			var want []string
			for j := range turns {
				want = append(want, fmt.Sprintf("%s-u%d", sid, j), fmt.Sprintf("%s-a%d", sid, j))
			}
			msgs, err := s.ListMessages(t.Context(), sid)
			if err != nil {
				t.Fatalf("ListMessages(%s): %v", sid, err)
			}
			if got := messageIDs(msgs); !slices.Equal(got, want) {
				t.Errorf("ListMessages(%s) = %v, want %v", sid, got, want)
			}
		}
		if ss, err := s.ListSessions(t.Context(), "", 0, 0); err != nil || len(ss) != sessions {
			t.Errorf("ListSessions = %d sessions, %v; want %d", len(ss), err, sessions)
		}
	}},
	{"ConcurrentTurnsInOneSessionKeepEachQuestionBeforeItsAnswer", func(t *testing.T, s history.Store) {
		const turns = 10
		createSession(t, s, "s1")
		errs := make([]error, turns)
		var wg sync.WaitGroup
		for i := range turns {
			wg.Go(func() {
				_, _, errs[i] = s.StartTurn(t.Context(), "s1",
					history.Message{ID: fmt.Sprintf("u%d", i), Content: "q"}, fmt.Sprintf("a%d", i))
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("StartTurn: %v", err)
		}
		msgs, err := s.ListMessages(t.Context(), "s1")
		if err != nil || len(msgs) != 2*turns {
			t.Fatalf("ListMessages = %v, %v; want %d messages", messageIDs(msgs), err, 2*turns)
		}
		ids := messageIDs(msgs)
		for i := range turns {
			u, a := slices.Index(ids, fmt.Sprintf("u%d", i)), slices.Index(ids, fmt.Sprintf("a%d", i))
			if u < 0 || a < 0 || u > a {
				t.Errorf("turn %d: question at %d, answer at %d in %v", i, u, a, ids)
			}
		}
	}},
}
