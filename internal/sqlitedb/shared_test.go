package sqlitedb

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// sqlite3CLI is the sqlite3 shell, a real outside process; the test
// fails (it does not skip) when it is missing.
func sqlite3CLI(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Fatalf("the sqlite3 shell is needed to test outside readers (apt-get install sqlite3): %v", err)
	}
	return path
}

func shell(t *testing.T, file, sql string) string {
	t.Helper()
	out, err := exec.Command(sqlite3CLI(t), file, sql).CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3 %s %q: %v\n%s", file, sql, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestOpeningAFileTwiceSharesOneDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "chatpipe.db")
	first, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path, filepath.Join(dir, "link.db")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Join(dir, ".", "chatpipe.db"), filepath.Join(dir, "link.db")} {
		db, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if db != first {
			t.Errorf("Open(%q) opened the file again instead of sharing its database", p)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The other users' Close left it open for the first.
	if _, err := first.Writer.Exec(`CREATE TABLE t (x)`); err != nil {
		t.Fatalf("the database closed under its first user: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Writer.Ping(); err == nil {
		t.Error("the pools are still open after the last Close")
	}
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again == first {
		t.Error("Open after the last Close returned the closed database")
	}
}

// Two stores open the same file (as history and knowledge do), then an
// outside process reads it and exits. Rows written afterwards must reach
// the -wal file every other process sees: if the outside reader had taken
// the server for gone, it would have checkpointed and deleted the -wal
// under it, and those rows would live only in an unlinked file, lost at
// the next crash.
func TestOutsideReaderDoesNotTakeTheWALFromUnderTheServer(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	history, reader := open(t, path)
	if _, err := history.Exec(`CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	if err := reader.Ping(); err != nil {
		t.Fatal(err)
	}
	knowledge, _ := open(t, path) // the second store of the same file
	if _, err := knowledge.Exec(`INSERT INTO t VALUES (0)`); err != nil {
		t.Fatal(err)
	}
	if got := shell(t, path, "pragma integrity_check"); got != "ok" {
		t.Fatalf("integrity_check = %q", got)
	}
	for i := 1; i <= 5; i++ {
		if _, err := history.Exec(`INSERT INTO t VALUES (?)`, i); err != nil {
			t.Fatalf("write after the outside read: %v", err)
		}
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Errorf("the -wal file of the open database is gone: %v", err)
	}
	if got := shell(t, path, "select count(*) from t"); got != "6" {
		t.Fatalf("another process sees %s rows, want 6: the server writes into a deleted -wal", got)
	}
}

func TestBackupIsAConsistentPrivateCopyWhileTheDatabaseIsInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "chatpipe.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Writer.Exec(`CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := db.Writer.Exec(`INSERT INTO t VALUES (?)`, i); err != nil {
			t.Fatal(err)
		}
	}
	// A write transaction is open while the backup runs: the copy is the
	// last committed state, and the backup does not wait for the writer.
	tx, err := db.Writer.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO t VALUES (-1)`); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "backups", "copy.db")
	if err := Backup(context.Background(), db, dest); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("backup mode = %v, want 0600", perm)
	}
	if got := shell(t, dest, "pragma integrity_check"); got != "ok" {
		t.Fatalf("backup integrity_check = %q", got)
	}
	if got := shell(t, dest, "select count(*) from t"); got != strconv.Itoa(100) {
		t.Errorf("backup holds %s rows, want the 100 committed", got)
	}
	if _, err := os.Stat(dest + "-wal"); err == nil {
		t.Error("the backup needs a -wal file to be complete")
	}
	// An existing file is never overwritten.
	if err := Backup(context.Background(), db, dest); err == nil {
		t.Error("Backup over an existing file succeeded")
	}
	if got := shell(t, dest, "select count(*) from t"); got != "100" {
		t.Errorf("the refused backup changed the old one: %s rows", got)
	}
}
