package sqlitestore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/history/historytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openFile(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformanceOnFile(t *testing.T) {
	historytest.Run(t, func(t *testing.T) history.Store {
		return openFile(t, filepath.Join(t.TempDir(), "history.db"))
	})
}

func TestConformanceInMemory(t *testing.T) {
	historytest.Run(t, func(t *testing.T) history.Store { return openFile(t, MemoryPath) })
}

func TestOpenCreatesParentDirectoryAndPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "chatpipe", "history.db")
	s := openFile(t, path)
	defer s.Close()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("database file: %v", err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("database file mode = %v, want 0600", perm)
	}
}

func TestOpenRejectsURIAndDSNPaths(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{"", "file:" + filepath.Join(dir, "h.db"), filepath.Join(dir, "h.db") + "?mode=ro"} {
		if s, err := Open(t.Context(), path); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", path)
		}
	}
}

func TestConnectionsUseWALAndPragmas(t *testing.T) {
	s := openFile(t, filepath.Join(t.TempDir(), "history.db"))
	defer s.Close()
	checks := []struct {
		pool   string
		pragma string
		want   string
	}{
		{"writer", "journal_mode", "wal"},
		{"writer", "foreign_keys", "1"},
		{"writer", "synchronous", "1"}, // NORMAL
		{"writer", "busy_timeout", "30000"},
		{"writer", "query_only", "0"},
		{"reader", "journal_mode", "wal"},
		{"reader", "busy_timeout", "30000"},
		{"reader", "query_only", "1"},
	}
	for _, c := range checks {
		db := s.writer
		if c.pool == "reader" {
			db = s.reader
		}
		var got string
		if err := db.QueryRowContext(t.Context(), "PRAGMA "+c.pragma).Scan(&got); err != nil {
			t.Fatalf("%s PRAGMA %s: %v", c.pool, c.pragma, err)
		}
		if got != c.want {
			t.Errorf("%s PRAGMA %s = %s, want %s", c.pool, c.pragma, got, c.want)
		}
	}
	if got := s.writer.Stats().MaxOpenConnections; got != 1 {
		t.Errorf("writer MaxOpenConnections = %d, want 1", got)
	}
	if got := s.reader.Stats().MaxOpenConnections; got < 2 {
		t.Errorf("reader MaxOpenConnections = %d, want several", got)
	}
}

func TestReadsDoNotWaitForAnOpenWrite(t *testing.T) {
	s := openFile(t, filepath.Join(t.TempDir(), "history.db"))
	defer s.Close()
	if _, err := s.CreateSession(t.Context(), history.Session{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	// Hold the write lock with an uncommitted change.
	tx, err := s.writer.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(t.Context(), `UPDATE sessions SET title = 'uncommitted'`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	sess, err := s.GetSession(ctx, "s1")
	if err != nil {
		t.Fatalf("GetSession during a write: %v", err)
	}
	if sess.Title != "" {
		t.Errorf("read saw uncommitted title %q", sess.Title)
	}
}

func TestReopenKeepsDataAndSkipsAppliedMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	s := openFile(t, path)
	if _, err := s.CreateSession(t.Context(), history.Session{ID: "s1", Title: "kept"}); err != nil {
		t.Fatal(err)
	}
	_, a, err := s.StartTurn(t.Context(), "s1", history.Message{ID: "u1", Content: "q"}, "a1")
	if err != nil {
		t.Fatal(err)
	}
	before := appliedMigrations(t, s)
	if len(before) == 0 {
		t.Fatal("no migrations recorded")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// 0001 creates its tables without IF NOT EXISTS: running it again
	// would fail this Open.
	s = openFile(t, path)
	defer s.Close()
	if got := appliedMigrations(t, s); strings.Join(got, "\n") != strings.Join(before, "\n") {
		t.Errorf("schema_migrations after reopen = %q, want unchanged %q", got, before)
	}
	if sess, err := s.GetSession(t.Context(), "s1"); err != nil || sess.Title != "kept" {
		t.Errorf("GetSession after reopen = %+v, %v", sess, err)
	}
	if got, err := s.GetMessage(t.Context(), "a1"); err != nil || got.Status != history.StatusStreaming || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Errorf("GetMessage after reopen = %+v, %v; want %+v", got, err, a)
	}
}

// appliedMigrations lists schema_migrations rows as "version name applied_at".
func appliedMigrations(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.reader.QueryContext(t.Context(),
		`SELECT version || ' ' || name || ' ' || applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMigrationsApplyInVersionOrderOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	fsys := fstest.MapFS{
		// 10 sorts before 2 as text: order must come from the number.
		"migrations/0010_c.sql": {Data: []byte(`INSERT INTO log VALUES ('c');`)},
		"migrations/0002_b.sql": {Data: []byte(`INSERT INTO log VALUES ('b');`)},
		"migrations/0001_a.sql": {Data: []byte(`CREATE TABLE log (step TEXT); INSERT INTO log VALUES ('a');`)},
	}
	for range 2 {
		s, err := open(t.Context(), path, fsys)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		var steps string
		if err := s.reader.QueryRowContext(t.Context(), `SELECT group_concat(step, '') FROM log`).Scan(&steps); err != nil {
			t.Fatal(err)
		}
		if steps != "abc" {
			t.Errorf("steps run = %q, want abc (each once, in order)", steps)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFailedMigrationLeavesNoTraceAndOpenFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	fsys := fstest.MapFS{
		"migrations/0001_a.sql": {Data: []byte(`CREATE TABLE a (x);`)},
		"migrations/0002_b.sql": {Data: []byte(`CREATE TABLE b (x); INSERT INTO missing VALUES (1);`)},
	}
	if s, err := open(t.Context(), path, fsys); err == nil {
		s.Close()
		t.Fatal("open with a broken migration succeeded")
	}
	fsys["migrations/0002_b.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE b (x);`)}
	s, err := open(t.Context(), path, fsys)
	if err != nil {
		t.Fatalf("open after fixing the migration: %v", err)
	}
	defer s.Close()
	if got := len(appliedMigrations(t, s)); got != 2 {
		t.Errorf("%d migrations recorded, want 2", got)
	}
}

func TestOpenRefusesDatabaseFromNewerBuild(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	s := openFile(t, path)
	if _, err := s.writer.ExecContext(t.Context(),
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 'x')`); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), path)
	if err == nil {
		s.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("err = %v, want it to say the schema is newer", err)
	}
}

func TestCloseTwiceIsHarmless(t *testing.T) {
	s := openFile(t, filepath.Join(t.TempDir(), "history.db"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Error("Ping after Close succeeded")
	}
}

// TestMessagesFromBeforeTheTreeReadAsAChain opens a database migrated up
// to 0002 with rows in it, then the full schema.
func TestMessagesFromBeforeTheTreeReadAsAChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	old := fstest.MapFS{}
	for _, name := range []string{"0001_history.sql", "0002_tenants.sql"} {
		b, err := migrationFiles.ReadFile("migrations/" + name)
		if err != nil {
			t.Fatal(err)
		}
		old["migrations/"+name] = &fstest.MapFile{Data: b}
	}
	s, err := open(t.Context(), path, old)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range historytest.LegacyRowsSQL() {
		if _, err := s.writer.ExecContext(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openFile(t, path)
	defer s.Close()
	historytest.CheckLegacyChain(t, s)
}
