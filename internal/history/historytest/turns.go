package historytest

import (
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
)

var turnTests = []test{
	{"StartTurnSavesUserMessageAndReservesStreamingAnswer", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		in := history.Message{ID: "u1", Content: "What is WAL?",
			SessionID: "ignored", Role: "ignored", Status: "ignored",
			CreatedAt: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)}
		u, a, err := s.StartTurn(t.Context(), "s1", in, "a1")
		if err != nil {
			t.Fatalf("StartTurn: %v", err)
		}
		wantStoreTime(t, "user CreatedAt", u.CreatedAt)
		wantMessage(t, "user message", u, history.Message{ID: "u1", SessionID: "s1", Role: history.RoleUser,
			Content: "What is WAL?", Status: history.StatusCompleted, CreatedAt: u.CreatedAt, UpdatedAt: u.CreatedAt})
		if a.CreatedAt.Before(u.CreatedAt) {
			t.Errorf("assistant CreatedAt %v is before user CreatedAt %v", a.CreatedAt, u.CreatedAt)
		}
		wantMessage(t, "assistant message", a, history.Message{ID: "a1", SessionID: "s1", ParentID: "u1", Role: history.RoleAssistant,
			Status: history.StatusStreaming, CreatedAt: a.CreatedAt, UpdatedAt: a.CreatedAt})
		wantMessage(t, "GetMessage(u1)", getMessage(t, s, "u1"), u)
		wantMessage(t, "GetMessage(a1)", getMessage(t, s, "a1"), a)
	}},
	{"StartTurnInUnknownSessionFailsAndSavesNothing", func(t *testing.T, s history.Store) {
		_, _, err := s.StartTurn(t.Context(), "nope", history.Message{ID: "u1", Content: "hi"}, "a1")
		wantErr(t, "StartTurn", err, history.ErrNotFound)
		for _, id := range []string{"u1", "a1"} {
			_, err := s.GetMessage(t.Context(), id)
			wantErr(t, "GetMessage("+id+")", err, history.ErrNotFound)
		}
		if n, err := s.FailAbandoned(t.Context(), "x", time.Now().Add(time.Hour)); err != nil || n != 0 {
			t.Errorf("FailAbandoned = %d, %v; want 0", n, err)
		}
	}},
	{"StartTurnWithTakenMessageIDFailsAndSavesNothing", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		before := getSession(t, s, "s1")
		createSession(t, s, "s2")
		startTurn(t, s, "s2", "u1", "a1")
		cases := []struct{ name, user, assistant string }{
			{"taken assistant ID", "u2", "a1"},
			{"taken user ID", "u1", "a2"},
			{"same ID twice", "x", "x"},
		}
		for _, c := range cases {
			_, _, err := s.StartTurn(t.Context(), "s1", history.Message{ID: c.user}, c.assistant)
			wantErr(t, "StartTurn with "+c.name, err, history.ErrAlreadyExists)
		}
		msgs, err := s.ListMessages(t.Context(), "s1")
		if err != nil || len(msgs) != 0 {
			t.Errorf("ListMessages(s1) = %v, %v; want none: a failed turn must save nothing", messageIDs(msgs), err)
		}
		wantSession(t, "session after failed turns", getSession(t, s, "s1"), before)
	}},
	{"StartTurnWithEmptyMessageIDFails", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		if _, _, err := s.StartTurn(t.Context(), "s1", history.Message{Content: "hi"}, "a1"); err == nil {
			t.Error("StartTurn with empty user ID succeeded")
		}
		if _, _, err := s.StartTurn(t.Context(), "s1", history.Message{ID: "u1"}, ""); err == nil {
			t.Error("StartTurn with empty assistant ID succeeded")
		}
		if msgs, err := s.ListMessages(t.Context(), "s1"); err != nil || len(msgs) != 0 {
			t.Errorf("ListMessages = %v, %v; want none", messageIDs(msgs), err)
		}
	}},
	{"GetMessageOfUnknownIDFailsWithErrNotFound", func(t *testing.T, s history.Store) {
		_, err := s.GetMessage(t.Context(), "nope")
		wantErr(t, "GetMessage", err, history.ErrNotFound)
	}},
	{"FinishMessageSavesFinalStateForEachStatus", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		finals := []history.Final{
			{Status: history.StatusCompleted, Content: "Write-ahead logging [1].", Thinking: "recall docs",
				References: []eventbus.Reference{{Index: 1, ChunkID: "c1", DocumentID: "d1", Title: "WAL", Content: "…", Score: 0.87}},
				Usage:      &eventbus.Usage{PromptTokens: 120, CompletionTokens: 30, ReasoningTokens: 7, TTFTMS: 250, TotalMS: 1900}},
			{Status: history.StatusStopped, Content: "Write-ahe"},
			{Status: history.StatusFailed, Content: "partial", Error: "The model stopped responding."},
			{Status: history.StatusFailed, Error: "The model is unavailable."},
		}
		for i, f := range finals {
			id := string(rune('a' + i))
			_, a := startTurn(t, s, "s1", "u"+id, id)
			finish(t, s, id, f)
			got := getMessage(t, s, id)
			if got.UpdatedAt.Before(a.CreatedAt) {
				t.Errorf("%s: UpdatedAt %v before CreatedAt %v", f.Status, got.UpdatedAt, a.CreatedAt)
			}
			wantStoreTime(t, "UpdatedAt", got.UpdatedAt)
			wantMessage(t, "finished "+f.Status, got, history.Message{ID: id, SessionID: "s1", ParentID: "u" + id, Role: history.RoleAssistant,
				Content: f.Content, Thinking: f.Thinking, References: f.References, Status: f.Status, Usage: f.Usage,
				Error: f.Error, CreatedAt: a.CreatedAt, UpdatedAt: got.UpdatedAt})
		}
	}},
	{"FinishMessageTwiceFailsWithErrAlreadyFinishedAndKeepsFirst", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u1", "a1")
		finish(t, s, "a1", history.Final{Status: history.StatusStopped, Content: "first"})
		first := getMessage(t, s, "a1")
		for _, status := range []string{history.StatusCompleted, history.StatusStopped, history.StatusFailed} {
			err := s.FinishMessage(t.Context(), "a1", history.Final{Status: status, Content: "second", Error: "late"})
			wantErr(t, "second FinishMessage("+status+")", err, history.ErrAlreadyFinished)
		}
		wantMessage(t, "after second finish", getMessage(t, s, "a1"), first)
	}},
	{"FinishMessageOfUserMessageFailsWithErrAlreadyFinished", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		u, _ := startTurn(t, s, "s1", "u1", "a1")
		err := s.FinishMessage(t.Context(), "u1", history.Final{Status: history.StatusCompleted, Content: "x"})
		wantErr(t, "FinishMessage(user message)", err, history.ErrAlreadyFinished)
		wantMessage(t, "user message", getMessage(t, s, "u1"), u)
	}},
	{"FinishMessageOfUnknownIDFailsWithErrNotFound", func(t *testing.T, s history.Store) {
		err := s.FinishMessage(t.Context(), "nope", history.Final{Status: history.StatusCompleted})
		wantErr(t, "FinishMessage", err, history.ErrNotFound)
	}},
	{"FinishMessageWithInvalidStatusFailsAndKeepsStreaming", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		_, a := startTurn(t, s, "s1", "u1", "a1")
		for _, status := range []string{"", history.StatusStreaming, "done"} {
			if err := s.FinishMessage(t.Context(), "a1", history.Final{Status: status, Content: "x"}); err == nil {
				t.Errorf("FinishMessage with status %q succeeded", status)
			}
		}
		wantMessage(t, "still reserved", getMessage(t, s, "a1"), a)
	}},
	{"FailAbandonedFailsOnlyStreamingMessages", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		createSession(t, s, "s2")
		startTurn(t, s, "s1", "u1", "a1")
		finish(t, s, "a1", history.Final{Status: history.StatusCompleted, Content: "done"})
		done := getMessage(t, s, "a1")
		_, a2 := startTurn(t, s, "s1", "u2", "a2")
		_, a3 := startTurn(t, s, "s2", "u3", "a3")

		cutoff := time.Now().Add(time.Second)
		n, err := s.FailAbandoned(t.Context(), "The server restarted while answering.", cutoff)
		if err != nil || n != 2 {
			t.Fatalf("FailAbandoned = %d, %v; want 2", n, err)
		}
		for _, a := range []history.Message{a2, a3} {
			got := getMessage(t, s, a.ID)
			if got.UpdatedAt.Before(a.CreatedAt) {
				t.Errorf("%s: UpdatedAt %v before CreatedAt %v", a.ID, got.UpdatedAt, a.CreatedAt)
			}
			want := a
			want.Status, want.Error, want.UpdatedAt = history.StatusFailed, "The server restarted while answering.", got.UpdatedAt
			wantMessage(t, "abandoned "+a.ID, got, want)
		}
		wantMessage(t, "finished a1", getMessage(t, s, "a1"), done)

		if n, err := s.FailAbandoned(t.Context(), "again", cutoff); err != nil || n != 0 {
			t.Errorf("second FailAbandoned = %d, %v; want 0", n, err)
		}
		err = s.FinishMessage(t.Context(), "a2", history.Final{Status: history.StatusCompleted, Content: "late"})
		wantErr(t, "FinishMessage after FailAbandoned", err, history.ErrAlreadyFinished)
	}},
	{"FailAbandonedOnEmptyStoreReportsZero", func(t *testing.T, s history.Store) {
		if n, err := s.FailAbandoned(t.Context(), "restart", time.Now().Add(time.Hour)); err != nil || n != 0 {
			t.Errorf("FailAbandoned = %d, %v; want 0", n, err)
		}
	}},
	{"FailAbandonedLeavesYoungerStreamingMessages", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u1", "a1")
		if n, err := s.FailAbandoned(t.Context(), "restart", time.Now().Add(-time.Hour)); err != nil || n != 0 {
			t.Errorf("FailAbandoned(an hour ago) = %d, %v; want 0", n, err)
		}
		if got := getMessage(t, s, "a1"); got.Status != history.StatusStreaming {
			t.Errorf("a live answer was failed: %+v", got)
		}
	}},
}
