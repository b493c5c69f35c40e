package sqlitedb

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, path string) (writer, reader *sql.DB) {
	t.Helper()
	db, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db.Writer, db.Reader
}

func TestOpenCreatesParentDirectoryAndPrivateFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data", "chatpipe", "chatpipe.db")
	open(t, path)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("database file: %v", err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("database file mode = %v, want 0600", perm)
	}
}

func TestOpenRejectsURIAndDSNPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, path := range []string{"", "file:" + filepath.Join(dir, "x.db"), filepath.Join(dir, "x.db") + "?mode=ro"} {
		if db, err := Open(path); err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded", path)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("rejected paths left files: %v", entries)
	}
}

func TestPoolsUseWALAndTheirPragmas(t *testing.T) {
	t.Parallel()
	writer, reader := open(t, filepath.Join(t.TempDir(), "chatpipe.db"))
	if writer == reader {
		t.Fatal("a file database has one pool for writing and reading")
	}
	if got := writer.Stats().MaxOpenConnections; got != 1 {
		t.Errorf("writer allows %d connections, want 1", got)
	}
	if got := reader.Stats().MaxOpenConnections; got < 4 || got < runtime.GOMAXPROCS(0) {
		t.Errorf("reader allows %d connections, want at least 4 and GOMAXPROCS", got)
	}
	for _, c := range []struct {
		pool         string
		pragma, want string
	}{
		{"writer", "journal_mode", "wal"},
		{"writer", "foreign_keys", "1"},
		{"writer", "synchronous", "1"}, // NORMAL
		{"writer", "busy_timeout", "30000"},
		{"writer", "query_only", "0"},
		{"reader", "journal_mode", "wal"},
		{"reader", "foreign_keys", "1"},
		{"reader", "busy_timeout", "30000"},
		{"reader", "query_only", "1"},
	} {
		db := writer
		if c.pool == "reader" {
			db = reader
		}
		var got string
		if err := db.QueryRow("PRAGMA " + c.pragma).Scan(&got); err != nil || got != c.want {
			t.Errorf("%s: PRAGMA %s = %q, %v; want %q", c.pool, c.pragma, got, err, c.want)
		}
	}
}

func TestWriterTransactionsTakeTheWriteLockUpFront(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	writer, _ := open(t, path)
	if _, err := writer.Exec(`CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	tx, err := writer.Begin() // IMMEDIATE: holds the write lock before writing
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	other, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`INSERT INTO t VALUES (1)`); err == nil {
		t.Error("another connection wrote while the writer's transaction was open")
	}
}

func TestInMemoryDatabaseIsOnePool(t *testing.T) {
	t.Parallel()
	writer, reader := open(t, MemoryPath)
	if writer != reader {
		t.Fatal("reader of an in-memory database is not the writer: it would see another, empty database")
	}
	if _, err := writer.Exec(`CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(`INSERT INTO t VALUES (1)`); err != nil {
		t.Errorf("the in-memory pool is not writable: %v", err)
	}
}

func TestCloseClosesBothPools(t *testing.T) {
	t.Parallel()
	db, err := Open(filepath.Join(t.TempDir(), "chatpipe.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for name, db := range map[string]*sql.DB{"writer": db.Writer, "reader": db.Reader} {
		if err := db.Ping(); err == nil {
			t.Errorf("%s still open after Close", name)
		}
	}
}

func TestTimesRoundTripAndSortAsText(t *testing.T) {
	t.Parallel()
	local := time.FixedZone("UTC+2", 2*3600)
	times := []time.Time{
		time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		time.Date(2025, 1, 2, 3, 4, 5, 600_000, time.UTC),
		time.Date(2025, 1, 2, 5, 4, 6, 0, local), // 03:04:06 UTC
		time.Date(2025, 10, 2, 3, 4, 5, 123_456_000, time.UTC),
	}
	var texts []string
	for _, tm := range times {
		s := FormatTime(tm)
		if len(s) != len("2006-01-02T15:04:05.000000Z") {
			t.Errorf("FormatTime(%v) = %q, not fixed width", tm, s)
		}
		back, err := ParseTime(s)
		if err != nil || !back.Equal(tm) || back.Location() != time.UTC {
			t.Errorf("ParseTime(%q) = %v, %v; want %v in UTC", s, back, err, tm)
		}
		texts = append(texts, s)
	}
	if !slices.IsSorted(texts) {
		t.Errorf("stored times %q do not sort as the times do", texts)
	}
	if _, err := ParseTime("yesterday"); err == nil || !strings.Contains(err.Error(), `"yesterday"`) {
		t.Errorf("ParseTime of a bad time = %v, want an error quoting it", err)
	}
}

func TestIsUniqueViolation(t *testing.T) {
	t.Parallel()
	writer, _ := open(t, MemoryPath)
	for _, stmt := range []string{
		`CREATE TABLE parent (id TEXT PRIMARY KEY, name TEXT UNIQUE)`,
		`CREATE TABLE child (parent TEXT NOT NULL REFERENCES parent (id))`,
		`INSERT INTO parent VALUES ('a', 'alpha')`,
	} {
		if _, err := writer.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		stmt string
		want bool
	}{
		{`INSERT INTO parent VALUES ('a', 'other')`, true}, // primary key
		{`INSERT INTO parent VALUES ('b', 'alpha')`, true}, // UNIQUE
		{`INSERT INTO child VALUES ('missing')`, false},    // foreign key
		{`INSERT INTO child VALUES (NULL)`, false},         // NOT NULL
		{`INSERT INTO nowhere VALUES (1)`, false},          // not a constraint
	} {
		_, err := writer.Exec(c.stmt)
		if err == nil {
			t.Fatalf("%s succeeded", c.stmt)
		}
		if got := IsUniqueViolation(fmt.Errorf("wrapped: %w", err)); got != c.want {
			t.Errorf("IsUniqueViolation(%v) = %v, want %v", err, got, c.want)
		}
	}
	if IsUniqueViolation(nil) {
		t.Error("IsUniqueViolation(nil) = true")
	}
}

func TestIgnoreDone(t *testing.T) {
	t.Parallel()
	writer, _ := open(t, MemoryPath)
	tx, err := writer.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := IgnoreDone(tx.Rollback()); err != nil {
		t.Errorf("IgnoreDone(rollback after commit) = %v, want nil", err)
	}
	other := errors.New("disk on fire")
	if err := IgnoreDone(other); err != other {
		t.Errorf("IgnoreDone(%v) = %v, want it unchanged", other, err)
	}
}
