package historytest

import (
	"slices"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/history"
)

// metaTests cover history.FeedbackStore and history.SummaryStore.
var metaTests = []test{
	{"FeedbackIsSetReplacedReadAndDeleted", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u1", "a1")
		startTurn(t, s, "s1", "u2", "a2")
		before := time.Now().Add(-timeSlack)
		f, prev, err := s.SetFeedback(t.Context(), history.Feedback{MessageID: "a1", Rating: history.RatingUp,
			Comment: "clear", Model: "m1"})
		if err != nil || prev != "" {
			t.Fatalf("SetFeedback = %v, previous %q", err, prev)
		}
		if f.SessionID != "s1" || f.TenantID != history.DefaultTenant || f.Mode != "chat" || f.Rating != history.RatingUp ||
			f.Comment != "clear" || f.Model != "m1" || f.CreatedAt.Before(before) || !f.CreatedAt.Equal(f.UpdatedAt) {
			t.Fatalf("saved %+v", f)
		}
		g, prev, err := s.SetFeedback(t.Context(), history.Feedback{MessageID: "a1", Rating: history.RatingDown,
			Reason: "wrong", Model: "m1"})
		if err != nil || prev != history.RatingUp {
			t.Fatalf("replacing: %v, previous %q", err, prev)
		}
		if g.Rating != history.RatingDown || g.Comment != "" || g.Reason != "wrong" || !g.CreatedAt.Equal(f.CreatedAt) ||
			g.UpdatedAt.Before(f.UpdatedAt) {
			t.Fatalf("replaced %+v (first %+v)", g, f)
		}
		got, err := s.FeedbackFor(t.Context(), []string{"a1", "a2", "missing"})
		if err != nil || len(got) != 1 || got["a1"].Rating != history.RatingDown || got["a1"].Reason != "wrong" {
			t.Fatalf("FeedbackFor = %+v, %v", got, err)
		}
		removed, ok, err := s.DeleteFeedback(t.Context(), "a1")
		if err != nil || !ok || removed.Rating != history.RatingDown {
			t.Fatalf("DeleteFeedback = %+v, %v, %v", removed, ok, err)
		}
		if _, ok, err := s.DeleteFeedback(t.Context(), "a1"); err != nil || ok {
			t.Fatalf("DeleteFeedback again = %v, %v; want nothing removed, no error", ok, err)
		}
		if got, err := s.FeedbackFor(t.Context(), []string{"a1"}); err != nil || len(got) != 0 || got == nil {
			t.Fatalf("FeedbackFor after delete = %#v, %v", got, err)
		}
	}},
	{"FeedbackOnAMissingOrUserMessageSavesNothing", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u1", "a1")
		_, _, err := s.SetFeedback(t.Context(), history.Feedback{MessageID: "nope", Rating: history.RatingUp})
		wantErr(t, "SetFeedback on a missing message", err, history.ErrNotFound)
		_, _, err = s.SetFeedback(t.Context(), history.Feedback{MessageID: "u1", Rating: history.RatingUp})
		wantErr(t, "SetFeedback on a user message", err, history.ErrNotAssistant)
		if list, err := s.ListFeedback(t.Context(), "", time.Time{}, 0); err != nil || len(list) != 0 {
			t.Fatalf("ListFeedback = %+v, %v; want none", list, err)
		}
	}},
	{"FeedbackListsByTenantSinceAndGoesWithItsSession", func(t *testing.T, s history.Store) {
		for _, sess := range []history.Session{{ID: "s1", TenantID: "acme", Mode: "rag"}, {ID: "s2", TenantID: "other"}} {
			if _, err := s.CreateSession(t.Context(), sess); err != nil {
				t.Fatal(err)
			}
		}
		startTurn(t, s, "s1", "u1", "a1")
		startTurn(t, s, "s1", "u2", "a2")
		startTurn(t, s, "s2", "u3", "a3")
		set := func(id, rating string) history.Feedback {
			f, _, err := s.SetFeedback(t.Context(), history.Feedback{MessageID: id, Rating: rating})
			if err != nil {
				t.Fatalf("SetFeedback(%s): %v", id, err)
			}
			return f
		}
		f1 := set("a1", history.RatingUp)
		f2 := set("a2", history.RatingDown)
		set("a3", history.RatingUp)
		list, err := s.ListFeedback(t.Context(), "acme", time.Time{}, 0)
		if err != nil || len(list) != 2 || list[0].MessageID != "a1" || list[1].MessageID != "a2" ||
			list[0].TenantID != "acme" || list[0].Mode != "rag" {
			t.Fatalf("ListFeedback(acme) = %+v, %v", list, err)
		}
		if list, err := s.ListFeedback(t.Context(), "acme", f2.UpdatedAt, 0); err != nil || len(list) != 1 || list[0].MessageID != "a2" {
			t.Fatalf("ListFeedback since the second = %+v, %v", list, err)
		}
		if list, err := s.ListFeedback(t.Context(), "acme", f1.UpdatedAt, 1); err != nil || len(list) != 1 || list[0].MessageID != "a1" {
			t.Fatalf("ListFeedback limit 1 = %+v, %v", list, err)
		}
		if err := s.DeleteSession(t.Context(), "s1"); err != nil {
			t.Fatal(err)
		}
		if list, err := s.ListFeedback(t.Context(), "acme", time.Time{}, 0); err != nil || len(list) != 0 {
			t.Fatalf("feedback outlived its session: %+v, %v", list, err)
		}
		if list, err := s.ListFeedback(t.Context(), "other", time.Time{}, 0); err != nil || len(list) != 1 {
			t.Fatalf("another tenant's feedback = %+v, %v", list, err)
		}
	}},
	{"SummariesAreSavedNewestFirstAndCheckTheirRange", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		createSession(t, s, "s2")
		startTurn(t, s, "s1", "u1", "a1")
		startTurn(t, s, "s1", "u2", "a2")
		startTurn(t, s, "s2", "u9", "a9")
		if got, err := s.Summaries(t.Context(), "s1", 0); err != nil || got == nil || len(got) != 0 {
			t.Fatalf("Summaries of a session with none = %#v, %v", got, err)
		}
		first, err := s.SaveSummary(t.Context(), history.Summary{ID: "sum1", SessionID: "s1", FromMessageID: "u1",
			ToMessageID: "a1", Messages: 2, Content: "They greeted.", Model: "m"})
		if err != nil || first.CreatedAt.IsZero() {
			t.Fatalf("SaveSummary = %+v, %v", first, err)
		}
		if _, err := s.SaveSummary(t.Context(), history.Summary{ID: "sum2", SessionID: "s1", FromMessageID: "u1",
			ToMessageID: "a2", Messages: 4, Content: "They greeted twice."}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Summaries(t.Context(), "s1", 0)
		if err != nil || len(got) != 2 || got[0].ID != "sum2" || got[1].ID != "sum1" {
			t.Fatalf("Summaries = %+v, %v", got, err)
		}
		if w := got[1]; w.FromMessageID != "u1" || w.ToMessageID != "a1" || w.Messages != 2 || w.Content != "They greeted." ||
			w.Model != "m" || !w.CreatedAt.Equal(first.CreatedAt) {
			t.Fatalf("read back %+v, saved %+v", w, first)
		}
		if got, err := s.Summaries(t.Context(), "s1", 1); err != nil || len(got) != 1 || got[0].ID != "sum2" {
			t.Fatalf("Summaries limit 1 = %+v, %v", got, err)
		}
		_, err = s.SaveSummary(t.Context(), history.Summary{ID: "sum3", SessionID: "s1", FromMessageID: "u1", ToMessageID: "a9"})
		wantErr(t, "a range ending in another session", err, history.ErrNotFound)
		_, err = s.SaveSummary(t.Context(), history.Summary{ID: "sum4", SessionID: "nope", FromMessageID: "u1", ToMessageID: "a1"})
		wantErr(t, "an unknown session", err, history.ErrNotFound)
		_, err = s.SaveSummary(t.Context(), history.Summary{ID: "sum1", SessionID: "s1", FromMessageID: "u1", ToMessageID: "a1"})
		wantErr(t, "a taken id", err, history.ErrAlreadyExists)
		if got, _ := s.Summaries(t.Context(), "s1", 0); len(got) != 2 {
			t.Fatalf("refused summaries were saved: %+v", got)
		}
		if err := s.DeleteSession(t.Context(), "s1"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Summaries(t.Context(), "s1", 0); err != nil || len(got) != 0 {
			t.Fatalf("summaries outlived their session: %+v, %v", got, err)
		}
		if ids := summaryIDs(t, s, "s2"); !slices.Equal(ids, []string{}) {
			t.Fatalf("s2 summaries = %v", ids)
		}
	}},
}

func summaryIDs(t *testing.T, s history.Store, sessionID string) []string {
	t.Helper()
	got, err := s.Summaries(t.Context(), sessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, sum := range got {
		ids = append(ids, sum.ID)
	}
	return ids
}
