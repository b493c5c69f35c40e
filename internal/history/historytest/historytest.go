// Package historytest is the conformance suite for history.Store: the
// behaviour every implementation (SQLite, PostgreSQL, …) must have, tested
// through the interface only. An implementation's tests call Run.
package historytest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/history"
)

// Run runs the suite. open must return a new, empty store on every call;
// subtests run in parallel, each on its own store, and Run closes each
// store when its subtest ends.
func Run(t *testing.T, open func(t *testing.T) history.Store) {
	t.Helper()
	groups := [][]test{sessionTests, turnTests, readTests, contentTests, concurrencyTests, answerTests, partialTests,
		treeTests, titleTests, metaTests}
	for _, tc := range slices.Concat(groups...) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.run(t, s)
		})
	}
}

// test is one behaviour, run on a fresh store.
type test struct {
	name string
	run  func(t *testing.T, s history.Store)
}

// timeSlack bounds how far a store's clock may be from the test's: wide
// enough for a database server's clock, narrow enough to catch a wrong
// unit.
const timeSlack = 5 * time.Minute

func createSession(t *testing.T, s history.Store, id string) history.Session {
	t.Helper()
	sess, err := s.CreateSession(t.Context(), history.Session{ID: id, Title: "title of " + id, Mode: "chat"})
	if err != nil {
		t.Fatalf("CreateSession(%q): %v", id, err)
	}
	return sess
}

func startTurn(t *testing.T, s history.Store, sessionID, userID, assistantID string) (history.Message, history.Message) {
	t.Helper()
	u, a, err := s.StartTurn(t.Context(), sessionID,
		history.Message{ID: userID, Content: "question " + userID}, assistantID)
	if err != nil {
		t.Fatalf("StartTurn(%q, %q, %q): %v", sessionID, userID, assistantID, err)
	}
	return u, a
}

func finish(t *testing.T, s history.Store, id string, f history.Final) {
	t.Helper()
	if err := s.FinishMessage(t.Context(), id, f); err != nil {
		t.Fatalf("FinishMessage(%q): %v", id, err)
	}
}

func getMessage(t *testing.T, s history.Store, id string) history.Message {
	t.Helper()
	m, err := s.GetMessage(t.Context(), id)
	if err != nil {
		t.Fatalf("GetMessage(%q): %v", id, err)
	}
	return m
}

func getSession(t *testing.T, s history.Store, id string) history.Session {
	t.Helper()
	sess, err := s.GetSession(t.Context(), id)
	if err != nil {
		t.Fatalf("GetSession(%q): %v", id, err)
	}
	return sess
}

// wantErr fails unless err wraps want.
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: err = %v, want %v", what, err, want)
	}
}

// wantMessage fails unless got equals want field by field (times by
// time.Time.Equal).
func wantMessage(t *testing.T, what string, got, want history.Message) {
	t.Helper()
	if d := diffMessage(got, want); d != "" {
		t.Errorf("%s: message differs:%s", what, d)
	}
}

func diffMessage(got, want history.Message) string {
	var d string
	field := func(name string, g, w any) {
		if !reflect.DeepEqual(g, w) {
			d += fmt.Sprintf("\n  %s = %s, want %s", name, show(g), show(w))
		}
	}
	field("ID", got.ID, want.ID)
	field("SessionID", got.SessionID, want.SessionID)
	field("ParentID", got.ParentID, want.ParentID)
	field("Role", got.Role, want.Role)
	field("Content", got.Content, want.Content)
	field("Thinking", got.Thinking, want.Thinking)
	field("References", got.References, want.References)
	field("Status", got.Status, want.Status)
	field("Usage", got.Usage, want.Usage)
	field("Error", got.Error, want.Error)
	field("Model", got.Model, want.Model)
	field("Record", got.Record, want.Record)
	if !got.CreatedAt.Equal(want.CreatedAt) {
		d += fmt.Sprintf("\n  CreatedAt = %v, want %v", got.CreatedAt, want.CreatedAt)
	}
	if !got.UpdatedAt.Equal(want.UpdatedAt) {
		d += fmt.Sprintf("\n  UpdatedAt = %v, want %v", got.UpdatedAt, want.UpdatedAt)
	}
	return d
}

// show prints a value briefly: long strings by length and ends.
func show(v any) string {
	if s, ok := v.(string); ok && len(s) > 80 {
		return fmt.Sprintf("%d bytes %q…%q", len(s), s[:20], s[len(s)-20:])
	}
	return fmt.Sprintf("%+v", derefAny(v))
}

func derefAny(v any) any {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return rv.Elem().Interface()
	}
	return v
}

func wantSession(t *testing.T, what string, got, want history.Session) {
	t.Helper()
	if got.ID != want.ID || got.Title != want.Title || got.Mode != want.Mode ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("%s: session = %+v, want %+v", what, got, want)
	}
}

// wantStoreTime fails unless tm is a UTC time near the test's clock.
func wantStoreTime(t *testing.T, what string, tm time.Time) {
	t.Helper()
	if tm.Location() != time.UTC {
		t.Errorf("%s = %v: location %v, want UTC", what, tm, tm.Location())
	}
	if d := time.Since(tm); d > timeSlack || d < -timeSlack {
		t.Errorf("%s = %v: %v from now, want within %v", what, tm, d, timeSlack)
	}
}

// wantNonNil fails if a list is nil: an empty list must encode as [] in
// JSON, not null.
func wantNonNil[T any](t *testing.T, what string, list []T, err error) {
	t.Helper()
	if err == nil && list == nil {
		t.Errorf("%s returned a nil list, want an empty one", what)
	}
}

func messageIDs(msgs []history.Message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return ids
}

func sessionIDs(ss []history.Session) []string {
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	return ids
}

// canceled returns a context that is already canceled.
func canceled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}
