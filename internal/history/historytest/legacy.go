package historytest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/internal/history"
)

// legacyMessages are a session's messages as saved before the tree
// (migration 0003), in order, with the parent each must read back with:
// a failed empty answer, then a question answered side by side.
var legacyMessages = []struct{ id, role, status, parent string }{
	{"u1", "user", "completed", ""},
	{"a1", "assistant", "completed", "u1"},
	{"u2", "user", "completed", "a1"},
	{"a2", "assistant", "failed", "u2"},
	{"u3", "user", "completed", "a2"},
	{"a3x", "assistant", "completed", "u3"},
	{"a3y", "assistant", "completed", "u3"},
	{"u4", "user", "completed", "a3y"},
	{"a4", "assistant", "streaming", "u4"},
}

// LegacyRowsSQL inserts, into a schema migrated before the tree, a
// session "old" holding legacyMessages and an empty session "empty". The
// statements are the same for SQLite and PostgreSQL.
func LegacyRowsSQL() []string {
	const at = "'2025-01-01T00:00:00.000000Z'"
	stmts := []string{
		`INSERT INTO sessions (id, title, mode, created_at, updated_at) VALUES ('old', 'Old', 'chat', ` + at + `, ` + at + `)`,
		`INSERT INTO sessions (id, title, mode, created_at, updated_at) VALUES ('empty', 'Empty', 'chat', ` + at + `, ` + at + `)`,
	}
	for _, m := range legacyMessages {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO messages (id, session_id, role, content, status, created_at, updated_at)
			VALUES ('%s', 'old', '%s', 'text of %s', '%s', %s, %s)`, m.id, m.role, m.id, m.status, at, at))
	}
	return stmts
}

// CheckLegacyChain checks that the rows of LegacyRowsSQL, migrated, read
// as one chain: each question follows the message before it, each answer
// the question before it, and the last message is the current leaf.
func CheckLegacyChain(t *testing.T, s history.Store) {
	t.Helper()
	var ids []string
	for _, want := range legacyMessages {
		if got := getMessage(t, s, want.id); got.ParentID != want.parent {
			t.Errorf("migrated %s: parent %q, want %q", want.id, got.ParentID, want.parent)
		}
		ids = append(ids, want.id)
	}
	if got := getSession(t, s, "old").CurrentLeaf; got != "a4" {
		t.Errorf("migrated session's current leaf = %q, want a4", got)
	}
	if got := getSession(t, s, "empty").CurrentLeaf; got != "" {
		t.Errorf("migrated empty session's current leaf = %q, want none", got)
	}
	msgs, err := s.Branch(t.Context(), "old", "")
	want := strings.Join(slicesWithout(ids, "a3x"), " ")
	if got := strings.Join(messageIDs(msgs), " "); err != nil || got != want {
		t.Errorf("migrated branch = %q, %v; want %q", got, err, want)
	}
}

func slicesWithout(ids []string, drop string) []string {
	out := []string{}
	for _, id := range ids {
		if id != drop {
			out = append(out, id)
		}
	}
	return out
}
