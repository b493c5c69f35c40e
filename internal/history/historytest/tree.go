package historytest

import (
	"slices"
	"testing"

	"github.com/chatpipe/chatpipe/internal/history"
)

// treeTests cover the message tree: parents, the current leaf, branches,
// regenerated answers and edited questions, and what is refused.
var treeTests = []test{
	{"TurnsFormAChainAndTheLastAnswerIsTheLeaf", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		if sess := getSession(t, s, "s1"); sess.CurrentLeaf != "" {
			t.Fatalf("new session CurrentLeaf = %q, want none", sess.CurrentLeaf)
		}
		wantBranch(t, s, "s1", "", nil)
		u1, a1 := startTurn(t, s, "s1", "u1", "a1")
		if u1.ParentID != "" || a1.ParentID != "u1" {
			t.Fatalf("first turn parents: user %q, answer %q; want root and u1", u1.ParentID, a1.ParentID)
		}
		wantMessage(t, "GetMessage(u1)", getMessage(t, s, "u1"), u1)
		u2, a2 := startTurn(t, s, "s1", "u2", "a2")
		if u2.ParentID != "a1" || a2.ParentID != "u2" {
			t.Fatalf("second turn parents: user %q, answer %q; want a1 and u2", u2.ParentID, a2.ParentID)
		}
		wantMessage(t, "GetMessage(u2)", getMessage(t, s, "u2"), u2)
		wantMessage(t, "GetMessage(a2)", getMessage(t, s, "a2"), a2)
		if sess := getSession(t, s, "s1"); sess.CurrentLeaf != "a2" {
			t.Fatalf("CurrentLeaf = %q, want a2", sess.CurrentLeaf)
		}
		wantBranch(t, s, "s1", "", []string{"u1", "a1", "u2", "a2"})
		wantBranch(t, s, "s1", "u2", []string{"u1", "a1", "u2"})
		for limit, want := range map[int][]string{1: {"a2"}, 3: {"a1", "u2", "a2"}, 4: {"u1", "a1", "u2", "a2"}, 9: {"u1", "a1", "u2", "a2"}} {
			msgs, err := s.Branch(t.Context(), "s1", "", limit)
			if got := messageIDs(msgs); err != nil || !slices.Equal(got, want) {
				t.Errorf("Branch with limit %d = %v, %v; want %v", limit, got, err, want)
			}
		}
	}},
	{"StartAnswerAddsASiblingAndMovesTheLeaf", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u1", "a1")
		finish(t, s, "a1", history.Final{Status: history.StatusFailed, Error: "boom"})
		before := getSession(t, s, "s1")
		b, err := s.StartAnswer(t.Context(), "s1", "u1", "a1b")
		if err != nil {
			t.Fatalf("StartAnswer: %v", err)
		}
		wantMessage(t, "StartAnswer", b, history.Message{ID: "a1b", SessionID: "s1", ParentID: "u1",
			Role: history.RoleAssistant, Status: history.StatusStreaming, CreatedAt: b.CreatedAt, UpdatedAt: b.CreatedAt})
		wantMessage(t, "GetMessage", getMessage(t, s, "a1b"), b)
		wantStoreTime(t, "StartAnswer CreatedAt", b.CreatedAt)
		sess := getSession(t, s, "s1")
		if sess.CurrentLeaf != "a1b" || !sess.UpdatedAt.After(before.UpdatedAt) {
			t.Fatalf("after StartAnswer: leaf %q, updated %v (was %v); want a1b, later", sess.CurrentLeaf,
				sess.UpdatedAt, before.UpdatedAt)
		}
		wantBranch(t, s, "s1", "", []string{"u1", "a1b"})
		wantBranch(t, s, "s1", "a1", []string{"u1", "a1"})
		// The next question follows the answer now shown.
		u2, _ := startTurn(t, s, "s1", "u2", "a2")
		if u2.ParentID != "a1b" {
			t.Fatalf("next question's parent = %q, want a1b", u2.ParentID)
		}
		finish(t, s, "a1b", history.Final{Status: history.StatusCompleted, Content: "second try"})
		if m := getMessage(t, s, "a1"); m.Status != history.StatusFailed || m.Error != "boom" {
			t.Fatalf("the first answer changed: %+v", m)
		}
	}},
	{"AnEditedQuestionStartsABranchAndTheLeafSwitchesBetweenThem", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		startTurn(t, s, "s1", "u1", "a1")
		startTurn(t, s, "s1", "u2", "a2")
		u2b, _, err := s.StartTurn(t.Context(), "s1", history.Message{ID: "u2b", ParentID: "a1", Content: "edited"}, "a2b")
		if err != nil || u2b.ParentID != "a1" {
			t.Fatalf("StartTurn after a1 = %+v, %v", u2b, err)
		}
		wantBranch(t, s, "s1", "", []string{"u1", "a1", "u2b", "a2b"})
		for _, leaf := range []string{"a2", "a2b", "a2"} {
			if err := s.SetCurrentLeaf(t.Context(), "s1", leaf); err != nil {
				t.Fatalf("SetCurrentLeaf(%s): %v", leaf, err)
			}
			if got := getSession(t, s, "s1").CurrentLeaf; got != leaf {
				t.Fatalf("CurrentLeaf = %q, want %q", got, leaf)
			}
			wantBranch(t, s, "s1", "", []string{"u1", "a1", map[string]string{"a2": "u2", "a2b": "u2b"}[leaf], leaf})
		}
		// Editing the first question starts a new root.
		u1b, _, err := s.StartTurn(t.Context(), "s1", history.Message{ID: "u1b", ParentID: history.Root, Content: "again"}, "a1b")
		if err != nil || u1b.ParentID != "" {
			t.Fatalf("StartTurn at the root = %+v, %v", u1b, err)
		}
		wantMessage(t, "GetMessage(u1b)", getMessage(t, s, "u1b"), u1b)
		wantBranch(t, s, "s1", "", []string{"u1b", "a1b"})
		msgs, err := s.ListMessages(t.Context(), "s1")
		if got := messageIDs(msgs); err != nil || len(got) != 8 {
			t.Fatalf("ListMessages = %v, %v; want every branch", got, err)
		}
	}},
	{"SideBySideAnswersAreSiblings", func(t *testing.T, s history.Store) {
		as, ok := s.(history.AnswersStarter)
		if !ok {
			t.Fatal("the store does not implement history.AnswersStarter (every history store must)")
		}
		createSession(t, s, "s1")
		_, answers, err := as.StartTurnWithAnswers(t.Context(), "s1", history.Message{ID: "u1"}, []string{"a1", "a2"})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range answers {
			if a.ParentID != "u1" || getMessage(t, s, a.ID).ParentID != "u1" {
				t.Fatalf("answer %s parent = %q, want u1", a.ID, a.ParentID)
			}
		}
		if got := getSession(t, s, "s1").CurrentLeaf; got != "a1" {
			t.Fatalf("CurrentLeaf = %q, want the first answer a1", got)
		}
	}},
	{"BadParentsAndLeavesAreRefusedAndSaveNothing", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		createSession(t, s, "s2")
		startTurn(t, s, "s1", "u1", "a1")
		startTurn(t, s, "s2", "v1", "b1")
		before := getSession(t, s, "s1")
		for _, parent := range []string{"u1", "b1", "missing"} { // a question, another session's, none
			_, _, err := s.StartTurn(t.Context(), "s1", history.Message{ID: "x-" + parent, ParentID: parent}, "y-"+parent)
			wantErr(t, "StartTurn after "+parent, err, history.ErrBadParent)
		}
		for _, parent := range []string{"a1", "v1", "missing"} { // an answer, another session's, none
			_, err := s.StartAnswer(t.Context(), "s1", parent, "z-"+parent)
			wantErr(t, "StartAnswer to "+parent, err, history.ErrBadParent)
		}
		_, err := s.StartAnswer(t.Context(), "nope", "u1", "z")
		wantErr(t, "StartAnswer in an unknown session", err, history.ErrNotFound)
		_, err = s.StartAnswer(t.Context(), "s1", "u1", "a1")
		wantErr(t, "StartAnswer with a taken id", err, history.ErrAlreadyExists)
		_, _, err = s.StartTurn(t.Context(), "nope", history.Message{ID: "q", ParentID: "a1"}, "r")
		wantErr(t, "StartTurn in an unknown session", err, history.ErrNotFound)
		wantErr(t, "SetCurrentLeaf to another session's message", s.SetCurrentLeaf(t.Context(), "s1", "b1"), history.ErrNotFound)
		wantErr(t, "SetCurrentLeaf to a missing message", s.SetCurrentLeaf(t.Context(), "s1", "missing"), history.ErrNotFound)
		wantErr(t, "SetCurrentLeaf of an unknown session", s.SetCurrentLeaf(t.Context(), "nope", "a1"), history.ErrNotFound)
		_, err = s.Branch(t.Context(), "s1", "b1", 0)
		wantErr(t, "Branch to another session's message", err, history.ErrNotFound)
		_, err = s.Branch(t.Context(), "nope", "", 0)
		wantErr(t, "Branch of an unknown session", err, history.ErrNotFound)

		msgs, _ := s.ListMessages(t.Context(), "s1")
		if got := messageIDs(msgs); !slices.Equal(got, []string{"u1", "a1"}) {
			t.Fatalf("refused requests saved messages: %v", got)
		}
		wantSession(t, "session after refused requests", getSession(t, s, "s1"), before)
		if got := getSession(t, s, "s1").CurrentLeaf; got != "a1" {
			t.Fatalf("CurrentLeaf = %q after refused requests, want a1", got)
		}
	}},
	{"ModelAndRecordAreSavedWithTheAnswer", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		_, a := startTurn(t, s, "s1", "u1", "a1")
		startTurn(t, s, "s1", "u2", "a2")
		rec := &history.Record{
			ToolCalls: []history.ToolCall{{ID: "call_1", Name: "search", Arguments: `{"q":"x"}`, Turn: 1,
				Output: "found ü", Status: "completed", DurationMS: 12}},
			Stages: []history.StageTiming{{Name: "search", Status: "completed", ElapsedMS: 3, Detail: "2 hits"}},
			Cited:  []int{1, 3},
		}
		finish(t, s, "a1", history.Final{Status: history.StatusCompleted, Content: "x [1][3]", Model: "big", Record: rec})
		got := getMessage(t, s, "a1")
		if got.Model != "big" || !reflectEqual(got.Record, rec) {
			t.Fatalf("saved model %q, record %+v; want big, %+v", got.Model, got.Record, rec)
		}
		b, err := s.Branch(t.Context(), "s1", "a1", 0)
		if err != nil || len(b) != 2 || b[1].ID != a.ID || !reflectEqual(b[1].Record, rec) || b[1].Model != "big" {
			t.Fatalf("Branch = %+v, %v", b, err)
		}
		finish(t, s, "a2", history.Final{Status: history.StatusFailed, Record: &history.Record{}})
		if got := getMessage(t, s, "a2"); got.Record != nil || got.Model != "" {
			t.Fatalf("empty record read back as %+v, model %q; want nil, none", got.Record, got.Model)
		}
	}},
}

// titleTests cover renaming, generated titles and the mode of a session.
var titleTests = []test{
	{"AUserTitleIsNeverOverwrittenByAGeneratedOne", func(t *testing.T, s history.Store) {
		created := createSession(t, s, "s1")
		if created.TitleSource != history.TitleDefault {
			t.Fatalf("new session TitleSource = %q", created.TitleSource)
		}
		applied, err := s.SetGeneratedTitle(t.Context(), "s1", "Generated")
		if err != nil || !applied {
			t.Fatalf("SetGeneratedTitle = %v, %v; want applied", applied, err)
		}
		if sess := getSession(t, s, "s1"); sess.Title != "Generated" || sess.TitleSource != history.TitleGenerated {
			t.Fatalf("after SetGeneratedTitle: %+v", sess)
		}
		if err := s.RenameSession(t.Context(), "s1", "Mine"); err != nil {
			t.Fatal(err)
		}
		renamed := getSession(t, s, "s1")
		if renamed.Title != "Mine" || renamed.TitleSource != history.TitleUser || !renamed.UpdatedAt.After(created.UpdatedAt) {
			t.Fatalf("after RenameSession: %+v", renamed)
		}
		applied, err = s.SetGeneratedTitle(t.Context(), "s1", "Later")
		if err != nil || applied {
			t.Fatalf("SetGeneratedTitle after a rename = %v, %v; want not applied", applied, err)
		}
		wantSession(t, "after a refused generated title", getSession(t, s, "s1"), renamed)
		_, err = s.SetGeneratedTitle(t.Context(), "nope", "x")
		wantErr(t, "SetGeneratedTitle of an unknown session", err, history.ErrNotFound)
		wantErr(t, "RenameSession of an unknown session", s.RenameSession(t.Context(), "nope", "x"), history.ErrNotFound)
	}},
	{"ATitleGivenAtCreationIsTheUsers", func(t *testing.T, s history.Store) {
		sess, err := s.CreateSession(t.Context(), history.Session{ID: "s1", Title: "Chosen", TitleSource: history.TitleUser})
		if err != nil || sess.TitleSource != history.TitleUser {
			t.Fatalf("CreateSession = %+v, %v", sess, err)
		}
		if _, err := s.CreateSession(t.Context(), history.Session{ID: "s2", TitleSource: "bogus"}); err != nil {
			t.Fatal(err)
		}
		if got := getSession(t, s, "s2").TitleSource; got != history.TitleDefault {
			t.Fatalf("TitleSource %q stored as %q, want the default", "bogus", got)
		}
		applied, err := s.SetGeneratedTitle(t.Context(), "s1", "Generated")
		if err != nil || applied || getSession(t, s, "s1").Title != "Chosen" {
			t.Fatalf("SetGeneratedTitle over a title given at creation = %v, %v", applied, err)
		}
	}},
	{"SetSessionModeChangesTheMode", func(t *testing.T, s history.Store) {
		createSession(t, s, "s1")
		if err := s.SetSessionMode(t.Context(), "s1", "agent"); err != nil {
			t.Fatal(err)
		}
		if got := getSession(t, s, "s1"); got.Mode != "agent" {
			t.Fatalf("Mode = %q, want agent", got.Mode)
		}
		wantErr(t, "SetSessionMode of an unknown session", s.SetSessionMode(t.Context(), "nope", "x"), history.ErrNotFound)
	}},
}

func wantBranch(t *testing.T, s history.Store, sessionID, leaf string, want []string) {
	t.Helper()
	msgs, err := s.Branch(t.Context(), sessionID, leaf, 0)
	wantNonNil(t, "Branch", msgs, err)
	if got := messageIDs(msgs); err != nil || !slices.Equal(got, want) && len(got)+len(want) > 0 {
		t.Fatalf("Branch(%q, %q) = %v, %v; want %v", sessionID, leaf, got, err, want)
	}
}

func reflectEqual(a, b any) bool { return show(a) == show(b) }
