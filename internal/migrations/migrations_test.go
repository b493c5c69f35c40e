package migrations

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func sqlFile(body string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(body)} }

func TestLoadOrdersByVersionNumber(t *testing.T) {
	t.Parallel()
	ms, err := Load(fstest.MapFS{
		// 10 sorts before 2 as text: order must come from the number.
		"migrations/0010_c.sql":    sqlFile("C"),
		"migrations/0002_b.sql":    sqlFile("B"),
		"migrations/1_a.sql":       sqlFile("A"), // the width is not part of the number
		"migrations/README.md":     sqlFile("not a step"),
		"other/0003_elsewhere.sql": sqlFile("not in migrations/"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Migration{{1, "1_a.sql", "A"}, {2, "0002_b.sql", "B"}, {10, "0010_c.sql", "C"}}
	if !slices.Equal(ms, want) {
		t.Errorf("Load = %+v, want %+v", ms, want)
	}
}

func TestLoadOfNoFilesIsEmpty(t *testing.T) {
	t.Parallel()
	ms, err := Load(fstest.MapFS{})
	if err != nil || len(ms) != 0 {
		t.Errorf("Load = %v, %v; want none", ms, err)
	}
}

func TestBadMigrationNamesAreRejected(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"init.sql", "x_init.sql", "0000_zero.sql", "-1_negative.sql", "0001.sql"} {
		if _, err := Load(fstest.MapFS{"migrations/" + name: sqlFile(`SELECT 1;`)}); err == nil {
			t.Errorf("Load accepted %s", name)
		} else if !strings.Contains(err.Error(), name) {
			t.Errorf("Load(%s) = %v, want the error to name the file", name, err)
		}
	}
	_, err := Load(fstest.MapFS{
		"migrations/0001_a.sql": sqlFile(`SELECT 1;`),
		"migrations/1_b.sql":    sqlFile(`SELECT 1;`),
	})
	if err == nil || !strings.Contains(err.Error(), "share version 1") {
		t.Errorf("Load of two files with version 1 = %v, want an error", err)
	}
}

func TestLoadReportsUnreadableFiles(t *testing.T) {
	t.Parallel()
	_, err := Load(unreadable{fstest.MapFS{"migrations/0001_a.sql": sqlFile(`SELECT 1;`)}})
	if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Load = %v, want %v", err, fs.ErrPermission)
	}
}

// unreadable lists its files but cannot open them.
type unreadable struct{ fstest.MapFS }

func (u unreadable) Open(name string) (fs.File, error) {
	if strings.HasSuffix(name, ".sql") {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return u.MapFS.Open(name)
}

func (u unreadable) ReadFile(name string) ([]byte, error) {
	f, err := u.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return fs.ReadFile(u.MapFS, name)
}

func TestRefuseNewer(t *testing.T) {
	t.Parallel()
	ms := []Migration{{Version: 1}, {Version: 3}}
	for _, c := range []struct {
		name   string
		newest int
		ms     []Migration
		want   string // the error; "" for none
	}{
		{"empty database", 0, ms, ""},
		{"partly migrated", 1, ms, ""},
		{"up to date", 3, ms, ""},
		{"newer", 4, ms, "knowledge schema version 4 is newer than this build knows (3); upgrade chatpipe"},
		{"newer than a build without steps", 1, nil, "knowledge schema version 1 is newer than this build knows (0); upgrade chatpipe"},
		{"neither has steps", 0, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := RefuseNewer("knowledge", c.newest, c.ms)
			if got := fmt.Sprint(err); (err == nil) != (c.want == "") || (err != nil && got != c.want) {
				t.Errorf("RefuseNewer(%d) = %v, want %q", c.newest, err, c.want)
			}
		})
	}
}
