package run

import (
	"context"
	"testing"

	"github.com/chatpipe/chatpipe/internal/history"
)

// branchCounter is a history store that only answers Branch, counting the
// calls.
type branchCounter struct {
	history.Store
	calls int
	msgs  []history.Message
}

func (b *branchCounter) Branch(_ context.Context, _, _ string, _ int) ([]history.Message, error) {
	b.calls++
	return b.msgs, nil
}

// A question saved without a parent has nothing before it: the history
// before it is empty without a query to the store, while a follow-up
// question's history is read from it, less the question itself.
func TestMessagesBeforeARootQuestionAskTheStoreNothing(t *testing.T) {
	store := &branchCounter{msgs: []history.Message{
		{ID: "u1", Role: history.RoleUser, Content: "one"},
		{ID: "a1", ParentID: "u1", Role: history.RoleAssistant, Content: "answer"},
		{ID: "u2", ParentID: "a1", Role: history.RoleUser, Content: "two"},
	}}
	m := &Manager{opts: Options{History: store}}

	root, err := m.messagesBefore(history.Message{ID: "u1"}).Branch(t.Context(), "s", "u1", 10)
	if err != nil || root == nil || len(root) != 0 || store.calls != 0 {
		t.Fatalf("root question: %v, %v after %d store calls; want an empty history and no call", root, err, store.calls)
	}
	follow, err := m.messagesBefore(history.Message{ID: "u2", ParentID: "a1"}).Branch(t.Context(), "s", "u2", 10)
	if err != nil || len(follow) != 2 || follow[1].Content != "answer" || store.calls != 1 {
		t.Fatalf("follow-up: %+v, %v after %d store calls; want the first turn from one call", follow, err, store.calls)
	}
}
