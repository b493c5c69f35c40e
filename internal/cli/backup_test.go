package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

func runCommand(t *testing.T, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	c, ok := Lookup(name)
	if !ok {
		t.Fatalf("command %q is not registered", name)
	}
	var out, errb bytes.Buffer
	code = Main(context.Background(), c, args, &out, &errb)
	return out.String(), errb.String(), code
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBackupCopiesTheConfiguredDatabase(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "chatpipe.db")
	db, err := sqlitedb.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Writer.Exec(`CREATE TABLE t (x); INSERT INTO t VALUES (1), (2)`); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "storage:\n  sqlite:\n    path: "+src+"\n")
	dest := filepath.Join(dir, "backup.db")
	out, errs, code := runCommand(t, "backup", "-config", cfg, dest)
	if code != 0 || !strings.Contains(out, "backed up "+src+" to "+dest) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	copyDB, err := sqlitedb.Open(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer copyDB.Close()
	var n int
	if err := copyDB.Reader.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("backup holds %d rows (%v), want 2", n, err)
	}
}

func TestBackupRefusesWhatItCannotDo(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.db")
	if err := os.WriteFile(existing, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "chatpipe.db")
	db, err := sqlitedb.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sqliteCfg := writeConfig(t, "storage:\n  sqlite:\n    path: "+src+"\n")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no destination", []string{"-config", sqliteCfg}, 2, "usage: chatpipe backup"},
		{"two destinations", []string{"-config", sqliteCfg, "a.db", "b.db"}, 2, "usage: chatpipe backup"},
		{"existing destination", []string{"-config", sqliteCfg, existing}, 1, "file exists"},
		{"no database", []string{"-config", writeConfig(t, "storage:\n  sqlite:\n    path: "+filepath.Join(dir, "none.db")+"\n"),
			filepath.Join(dir, "x.db")}, 1, "storage.sqlite.path: no database at"},
		{"postgres", []string{"-config", writeConfig(t, "storage:\n  driver: postgres\npostgres:\n  dsn: postgres://x@127.0.0.1/x\n"),
			filepath.Join(dir, "y.db")}, 1, "pg_dump"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs, code := runCommand(t, "backup", c.args...)
			if code != c.code || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, errs, c.code, c.want)
			}
		})
	}
	if data, _ := os.ReadFile(existing); string(data) != "keep me" {
		t.Errorf("the existing file was changed: %q", data)
	}
	for _, name := range []string{"none.db", "x.db", "y.db"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("a refused backup left %s", name)
		}
	}
}
