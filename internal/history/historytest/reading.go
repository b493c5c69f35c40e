package historytest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/chatpipe/chatpipe/internal/history"
)

var readTests = []test{
	{"ListMessagesReturnsSessionMessagesInCreationOrder", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		createSession(t, s, "other")
		var want []history.Message
		for i := range 10 {
			u, a := startTurn(t, s, "s1", fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i))
			startTurn(t, s, "other", fmt.Sprintf("ou%d", i), fmt.Sprintf("oa%d", i))
			// Finishing an earlier answer later must not move it.
			if i%2 == 0 {
				finish(t, s, a.ID, history.Final{Status: history.StatusCompleted, Content: "answer"})
				a = getMessage(t, s, a.ID)
			}
			want = append(want, u, a)
		}
		got, err := s.ListMessages(t.Context(), "s1")
		if err != nil {
			t.Fatalf("ListMessages: %v", err)
		}
		if !slices.Equal(messageIDs(got), messageIDs(want)) {
			t.Fatalf("ListMessages = %v, want %v", messageIDs(got), messageIDs(want))
		}
		for i := range got {
			wantMessage(t, "ListMessages["+got[i].ID+"]", got[i], want[i])
		}
	}},
	{"ListMessagesOfEmptySessionIsEmpty", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		msgs, err := s.ListMessages(t.Context(), "s1")
		if err != nil || len(msgs) != 0 {
			t.Errorf("ListMessages = %v, %v; want none", messageIDs(msgs), err)
		}
		wantNonNil(t, "ListMessages", msgs, err)
	}},
	{"ListMessagesOfUnknownSessionFailsWithErrNotFound", func(t *testing.T, s history.Store) {
		_, err := s.ListMessages(t.Context(), "nope")
		wantErr(t, "ListMessages", err, history.ErrNotFound)
	}},
	{"RecentMessagesFiltersLimitsAndEndsBeforeMessage", testRecentMessages},
	{"RecentMessagesOfUnknownSessionOrBeforeFailsWithErrNotFound", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		createSession(t, s, "s2")
		startTurn(t, s, "s1", "u1", "a1")
		startTurn(t, s, "s2", "u2", "a2")
		cases := []struct{ name, session, before string }{
			{"unknown session", "nope", ""},
			{"unknown session with before", "nope", "u1"},
			{"unknown before", "s1", "nope"},
			{"before in another session", "s1", "u2"},
		}
		for _, c := range cases {
			_, err := s.RecentMessages(t.Context(), c.session, c.before, 10)
			wantErr(t, "RecentMessages with "+c.name, err, history.ErrNotFound)
		}
	}},
	{"RecentMessagesOfEmptySessionIsEmpty", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		msgs, err := s.RecentMessages(t.Context(), "s1", "", 10)
		if err != nil || len(msgs) != 0 {
			t.Errorf("RecentMessages = %v, %v; want none", messageIDs(msgs), err)
		}
		wantNonNil(t, "RecentMessages", msgs, err)
		startTurn(t, s, "s1", "u1", "a1")
		msgs, err = s.RecentMessages(t.Context(), "s1", "u1", 10)
		if err != nil || len(msgs) != 0 {
			t.Errorf("RecentMessages(before first) = %v, %v; want none", messageIDs(msgs), err)
		}
		wantNonNil(t, "RecentMessages(before first)", msgs, err)
	}},
}

// testRecentMessages builds one session whose answers end every way an
// answer can, and checks which messages load as history.
func testRecentMessages(t *testing.T, s history.Store) {
	createSession(t, s, "s1")
	createSession(t, s, "other")
	turns := []struct {
		final *history.Final // nil: still streaming
	}{
		{&history.Final{Status: history.StatusCompleted, Content: "a1"}},    // kept
		{&history.Final{Status: history.StatusFailed, Error: "model down"}}, // skipped: failed, no content
		{&history.Final{Status: history.StatusFailed, Content: "partial"}},  // kept: failed with content
		{&history.Final{Status: history.StatusStopped}},                     // kept: stopped is not failed
		{&history.Final{Status: history.StatusCompleted, Content: "a5"}},    // kept
		{nil}, // skipped: streaming
	}
	byID := map[string]history.Message{}
	for i, turn := range turns {
		n := i + 1
		startTurn(t, s, "s1", fmt.Sprintf("u%d", n), fmt.Sprintf("a%d", n))
		startTurn(t, s, "other", fmt.Sprintf("ou%d", n), fmt.Sprintf("oa%d", n))
		if turn.final != nil {
			finish(t, s, fmt.Sprintf("a%d", n), *turn.final)
		}
	}
	all, err := s.ListMessages(t.Context(), "s1")
	if err != nil {
		t.Fatalf("ListMessages: %v", err)
	}
	for _, m := range all {
		byID[m.ID] = m
	}

	cases := []struct {
		before string
		limit  int
		want   []string
	}{
		{"", 0, []string{"u1", "a1", "u2", "u3", "a3", "u4", "a4", "u5", "a5", "u6"}},
		{"", -1, []string{"u1", "a1", "u2", "u3", "a3", "u4", "a4", "u5", "a5", "u6"}},
		{"", 100, []string{"u1", "a1", "u2", "u3", "a3", "u4", "a4", "u5", "a5", "u6"}},
		{"", 3, []string{"u5", "a5", "u6"}},
		{"u6", 0, []string{"u1", "a1", "u2", "u3", "a3", "u4", "a4", "u5", "a5"}},
		{"u6", 4, []string{"u4", "a4", "u5", "a5"}},
		{"u3", 2, []string{"a1", "u2"}},
		{"a2", 0, []string{"u1", "a1", "u2"}}, // a skipped message still marks the end
		{"u1", 10, nil},
		{"a1", 10, []string{"u1"}},
	}
	for _, c := range cases {
		got, err := s.RecentMessages(t.Context(), "s1", c.before, c.limit)
		if err != nil {
			t.Errorf("RecentMessages(before %q, limit %d): %v", c.before, c.limit, err)
			continue
		}
		if !slices.Equal(messageIDs(got), c.want) {
			t.Errorf("RecentMessages(before %q, limit %d) = %v, want %v", c.before, c.limit, messageIDs(got), c.want)
			continue
		}
		for _, m := range got {
			wantMessage(t, "RecentMessages["+m.ID+"]", m, byID[m.ID])
		}
	}
}
