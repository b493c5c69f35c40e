package historytest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/history"
)

var sessionTests = []test{
	{"CreateSessionStampsTimesAndGetReturnsItUnchanged", func(t *testing.T, s history.Store) {
		in := history.Session{ID: "s1", Title: "Plans", Mode: "chat",
			CreatedAt: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)} // ignored: the store stamps
		got, err := s.CreateSession(t.Context(), in)
		if err != nil {
			t.Fatalf("CreateSession: %v", err)
		}
		if got.ID != in.ID || got.Title != in.Title || got.Mode != in.Mode {
			t.Errorf("CreateSession = %+v, want the fields of %+v", got, in)
		}
		wantStoreTime(t, "CreatedAt", got.CreatedAt)
		if !got.UpdatedAt.Equal(got.CreatedAt) {
			t.Errorf("UpdatedAt = %v, want CreatedAt %v", got.UpdatedAt, got.CreatedAt)
		}
		wantSession(t, "GetSession", getSession(t, s, "s1"), got)
	}},
	{"CreateSessionWithTakenIDFailsWithErrAlreadyExists", func(t *testing.T, s history.Store) {
		first := createSession(t, s, "s1")
		_, err := s.CreateSession(t.Context(), history.Session{ID: "s1", Title: "other"})
		wantErr(t, "second CreateSession", err, history.ErrAlreadyExists)
		wantSession(t, "GetSession", getSession(t, s, "s1"), first)
	}},
	{"CreateSessionWithEmptyIDFails", func(t *testing.T, s history.Store) {
		if _, err := s.CreateSession(t.Context(), history.Session{Title: "no id"}); err == nil {
			t.Fatal("CreateSession with empty ID succeeded")
		}
		if ss, err := s.ListSessions(t.Context(), "", 0, 0); err != nil || len(ss) != 0 {
			t.Errorf("ListSessions = %v, %v; want none", sessionIDs(ss), err)
		}
	}},
	{"SessionsBelongToTheirTenant", func(t *testing.T, s history.Store) {
		for _, in := range []history.Session{
			{ID: "a1", TenantID: "acme"}, {ID: "a2", TenantID: "acme"}, {ID: "b1", TenantID: "beta"}, {ID: "d1"},
		} {
			if _, err := s.CreateSession(t.Context(), in); err != nil {
				t.Fatalf("CreateSession(%s): %v", in.ID, err)
			}
		}
		for tenant, want := range map[string][]string{
			"acme": {"a2", "a1"}, "beta": {"b1"}, "": {"d1"}, history.DefaultTenant: {"d1"}, "nobody": {},
		} {
			ss, err := s.ListSessions(t.Context(), tenant, 0, 0)
			if err != nil || !slices.Equal(sessionIDs(ss), want) {
				t.Errorf("ListSessions(%q) = %v, %v; want %v", tenant, sessionIDs(ss), err, want)
			}
		}
		if got := getSession(t, s, "b1"); got.TenantID != "beta" {
			t.Errorf("GetSession(b1).TenantID = %q, want beta", got.TenantID)
		}
		if got := getSession(t, s, "d1"); got.TenantID != history.DefaultTenant {
			t.Errorf("a session created without a tenant has TenantID %q, want %q", got.TenantID, history.DefaultTenant)
		}
	}},
	{"GetSessionOfUnknownIDFailsWithErrNotFound", func(t *testing.T, s history.Store) {
		_, err := s.GetSession(t.Context(), "nope")
		wantErr(t, "GetSession", err, history.ErrNotFound)
	}},
	{"ListSessionsOfEmptyStoreIsEmpty", func(t *testing.T, s history.Store) {
		ss, err := s.ListSessions(t.Context(), "", 10, 0)
		if err != nil || len(ss) != 0 {
			t.Errorf("ListSessions = %v, %v; want none", sessionIDs(ss), err)
		}
		wantNonNil(t, "ListSessions", ss, err)
	}},
	{"ListSessionsPagesMostRecentlyUpdatedFirst", func(t *testing.T, s history.Store) {
		for _, id := range []string{"s1", "s2", "s3", "s4", "s5"} {
			createSession(t, s, id)
		}
		cases := []struct {
			limit, offset int
			want          []string
		}{
			{0, 0, []string{"s5", "s4", "s3", "s2", "s1"}},
			{-1, 0, []string{"s5", "s4", "s3", "s2", "s1"}},
			{2, 0, []string{"s5", "s4"}},
			{2, 2, []string{"s3", "s2"}},
			{2, 4, []string{"s1"}},
			{2, 5, nil},
			{10, 0, []string{"s5", "s4", "s3", "s2", "s1"}},
		}
		for _, c := range cases {
			ss, err := s.ListSessions(t.Context(), "", c.limit, c.offset)
			if err != nil {
				t.Fatalf("ListSessions(%d, %d): %v", c.limit, c.offset, err)
			}
			if got := sessionIDs(ss); !slices.Equal(got, c.want) {
				t.Errorf("ListSessions(%d, %d) = %v, want %v", c.limit, c.offset, got, c.want)
			}
		}
	}},
	{"ListSessionsReturnsSavedFields", func(t *testing.T, s history.Store) {
		want := createSession(t, s, "s1")
		ss, err := s.ListSessions(t.Context(), "", 0, 0)
		if err != nil || len(ss) != 1 {
			t.Fatalf("ListSessions = %v, %v; want [s1]", sessionIDs(ss), err)
		}
		wantSession(t, "ListSessions[0]", ss[0], want)
	}},
	{"StartTurnMovesSessionToFrontOfList", func(t *testing.T, s history.Store) {
		for _, id := range []string{"s1", "s2", "s3"} {
			createSession(t, s, id)
		}
		before := getSession(t, s, "s1")
		u, _ := startTurn(t, s, "s1", "u1", "a1")
		after := getSession(t, s, "s1")
		if !after.UpdatedAt.After(before.UpdatedAt) {
			t.Errorf("UpdatedAt after turn = %v, want after %v", after.UpdatedAt, before.UpdatedAt)
		}
		if after.UpdatedAt.Before(u.CreatedAt) {
			t.Errorf("UpdatedAt after turn = %v, before the user message's CreatedAt %v", after.UpdatedAt, u.CreatedAt)
		}
		if !after.CreatedAt.Equal(before.CreatedAt) {
			t.Errorf("CreatedAt changed from %v to %v", before.CreatedAt, after.CreatedAt)
		}
		ss, err := s.ListSessions(t.Context(), "", 0, 0)
		if err != nil {
			t.Fatalf("ListSessions: %v", err)
		}
		if got, want := sessionIDs(ss), []string{"s1", "s3", "s2"}; !slices.Equal(got, want) {
			t.Errorf("ListSessions = %v, want %v", got, want)
		}
	}},
	{"DeleteSessionRemovesItsMessagesOnly", func(t *testing.T, s history.Store) {
		createSession(t, s, "doomed")
		createSession(t, s, "kept")
		startTurn(t, s, "doomed", "u1", "a1")
		finish(t, s, "a1", history.Final{Status: history.StatusCompleted, Content: "answer"})
		startTurn(t, s, "doomed", "u2", "a2") // still streaming
		ku, ka := startTurn(t, s, "kept", "u3", "a3")

		if err := s.DeleteSession(t.Context(), "doomed"); err != nil {
			t.Fatalf("DeleteSession: %v", err)
		}
		_, err := s.GetSession(t.Context(), "doomed")
		wantErr(t, "GetSession(deleted)", err, history.ErrNotFound)
		for _, id := range []string{"u1", "a1", "u2", "a2"} {
			_, err := s.GetMessage(t.Context(), id)
			wantErr(t, "GetMessage("+id+") of deleted session", err, history.ErrNotFound)
		}
		_, err = s.ListMessages(t.Context(), "doomed")
		wantErr(t, "ListMessages(deleted)", err, history.ErrNotFound)
		err = s.FinishMessage(t.Context(), "a2", history.Final{Status: history.StatusCompleted})
		wantErr(t, "FinishMessage of deleted session", err, history.ErrNotFound)

		msgs, err := s.ListMessages(t.Context(), "kept")
		if err != nil || len(msgs) != 2 {
			t.Fatalf("ListMessages(kept) = %v, %v; want [u3 a3]", messageIDs(msgs), err)
		}
		wantMessage(t, "kept user message", msgs[0], ku)
		wantMessage(t, "kept assistant message", msgs[1], ka)
		// The deleted session's streaming answer is gone, not abandoned.
		if n, err := s.FailAbandoned(t.Context(), "restart", time.Now().Add(time.Hour)); err != nil || n != 1 {
			t.Errorf("FailAbandoned = %d, %v; want 1 (only a3)", n, err)
		}
	}},
	{"DeleteSessionOfUnknownIDFailsWithErrNotFound", func(t *testing.T, s history.Store) {
		wantErr(t, "DeleteSession(unknown)", s.DeleteSession(t.Context(), "nope"), history.ErrNotFound)
		createSession(t, s, "s1")
		if err := s.DeleteSession(t.Context(), "s1"); err != nil {
			t.Fatalf("DeleteSession: %v", err)
		}
		wantErr(t, "second DeleteSession", s.DeleteSession(t.Context(), "s1"), history.ErrNotFound)
	}},
	{"DeletedSessionIDCanBeReusedWithoutOldMessages", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u1", "a1")
		if err := s.DeleteSession(t.Context(), "s1"); err != nil {
			t.Fatalf("DeleteSession: %v", err)
		}
		createSession(t, s, "s1")
		msgs, err := s.ListMessages(t.Context(), "s1")
		if err != nil || len(msgs) != 0 {
			t.Errorf("ListMessages of recreated session = %v, %v; want none", messageIDs(msgs), err)
		}
		startTurn(t, s, "s1", "u1", "a1") // the old message IDs are free again
	}},
	{"PingSucceedsOnOpenStore", func(t *testing.T, s history.Store) {
		if err := s.Ping(t.Context()); err != nil {
			t.Errorf("Ping: %v", err)
		}
	}},
	{"CanceledContextFailsWithContextCanceled", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u1", "a1")
		ctx := canceled(t)
		_, err := s.CreateSession(ctx, history.Session{ID: "s2"})
		wantErr(t, "CreateSession", err, context.Canceled)
		_, _, err = s.StartTurn(ctx, "s1", history.Message{ID: "u2"}, "a2")
		wantErr(t, "StartTurn", err, context.Canceled)
		err = s.FinishMessage(ctx, "a1", history.Final{Status: history.StatusCompleted})
		wantErr(t, "FinishMessage", err, context.Canceled)
		_, err = s.GetSession(ctx, "s1")
		wantErr(t, "GetSession", err, context.Canceled)
		_, err = s.ListMessages(ctx, "s1")
		wantErr(t, "ListMessages", err, context.Canceled)

		if _, err := s.GetSession(t.Context(), "s2"); err == nil {
			t.Error("CreateSession with a canceled context saved the session")
		}
		if _, err := s.GetMessage(t.Context(), "u2"); err == nil {
			t.Error("StartTurn with a canceled context saved the message")
		}
		if m := getMessage(t, s, "a1"); m.Status != history.StatusStreaming {
			t.Errorf("FinishMessage with a canceled context changed status to %q", m.Status)
		}
	}},
}
