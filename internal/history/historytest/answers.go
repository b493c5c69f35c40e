package historytest

import (
	"slices"
	"testing"

	"github.com/chatpipe/chatpipe/internal/history"
)

// answerTests cover history.AnswersStarter, for stores that implement it.
var answerTests = []test{
	{"StartTurnWithAnswersReservesEachInOrderAndFinishesEachOnce", func(t *testing.T, s history.Store) {
		as, ok := s.(history.AnswersStarter)
		if !ok {
			t.Fatal("the store does not implement history.AnswersStarter (every history store must)")
		}
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u0", "a0")
		u, answers, err := as.StartTurnWithAnswers(t.Context(), "s1", history.Message{ID: "u1", Content: "Compare?"},
			[]string{"a1", "a2", "a3"})
		if err != nil {
			t.Fatalf("StartTurnWithAnswers: %v", err)
		}
		if u.ID != "u1" || u.Role != history.RoleUser || len(answers) != 3 {
			t.Fatalf("user %+v, %d answers", u, len(answers))
		}
		for i, a := range answers {
			wantMessage(t, "answer", a, history.Message{ID: []string{"a1", "a2", "a3"}[i], SessionID: "s1", ParentID: "u1",
				Role: history.RoleAssistant, Status: history.StatusStreaming, CreatedAt: a.CreatedAt, UpdatedAt: a.CreatedAt})
			wantMessage(t, "GetMessage", getMessage(t, s, a.ID), a)
		}
		msgs, err := s.ListMessages(t.Context(), "s1")
		if got := messageIDs(msgs); err != nil || !slices.Equal(got, []string{"u0", "a0", "u1", "a1", "a2", "a3"}) {
			t.Fatalf("ListMessages = %v, %v", got, err)
		}
		finish(t, s, "a2", history.Final{Status: history.StatusCompleted, Content: "two"})
		err = s.FinishMessage(t.Context(), "a2", history.Final{Status: history.StatusFailed})
		wantErr(t, "FinishMessage twice", err, history.ErrAlreadyFinished)
		if m := getMessage(t, s, "a1"); m.Status != history.StatusStreaming {
			t.Fatalf("finishing a2 changed a1: %+v", m)
		}
	}},
	{"StartTurnWithAnswersFailsWholeOnATakenID", func(t *testing.T, s history.Store) {
		as, ok := s.(history.AnswersStarter)
		if !ok {
			t.Fatal("the store does not implement history.AnswersStarter (every history store must)")
		}
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u0", "a0")
		_, _, err := as.StartTurnWithAnswers(t.Context(), "s1", history.Message{ID: "u1"}, []string{"a1", "a0"})
		wantErr(t, "StartTurnWithAnswers", err, history.ErrAlreadyExists)
		_, _, err = as.StartTurnWithAnswers(t.Context(), "nope", history.Message{ID: "u2"}, []string{"a5", "a6"})
		wantErr(t, "StartTurnWithAnswers in an unknown session", err, history.ErrNotFound)
		msgs, _ := s.ListMessages(t.Context(), "s1")
		if got := messageIDs(msgs); !slices.Equal(got, []string{"u0", "a0"}) {
			t.Fatalf("a failed turn saved messages: %v", got)
		}
	}},
}
