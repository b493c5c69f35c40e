package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

func init() {
	Register(Command{
		Name:    "backup",
		Summary: "FILE: copy the SQLite database to FILE, safely, even while a server runs",
		Run:     runBackup,
	})
}

// runBackup copies the configured SQLite database to a new file with
// VACUUM INTO: a consistent snapshot taken through SQLite's own locking,
// so it is safe next to a running server (copying the file with cp is
// not: it misses what is still in the -wal file, or tears a write).
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset, configPath := FlagSet("backup", stderr)
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: chatpipe backup [-config FILE] DEST")
		fmt.Fprintln(stderr, "Copies storage.sqlite.path to DEST (which must not exist), safely while a server runs.")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		return ErrUsage
	}
	if fset.NArg() != 1 {
		fset.Usage()
		return ErrUsage
	}
	dest := fset.Arg(0)
	cfg, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	if cfg.Storage.Driver != "sqlite" {
		return fmt.Errorf("storage.driver is %q: back up PostgreSQL with its own tools (pg_dump)", cfg.Storage.Driver)
	}
	src := cfg.Storage.SQLite.Path
	if src == sqlitedb.MemoryPath {
		return errors.New("storage.sqlite.path is an in-memory database: nothing to back up")
	}
	// Opening would create a missing database; a backup of nothing is a
	// mistake (a wrong -config or working directory) worth saying.
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage.sqlite.path: no database at %s", src)
	}
	db, err := sqlitedb.Open(src)
	if err != nil {
		return fmt.Errorf("storage.sqlite.path: %w", err)
	}
	defer db.Close()
	if err := sqlitedb.Backup(ctx, db, dest); err != nil {
		return err
	}
	info, err := os.Stat(dest)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s (%d bytes)\n", src, dest, info.Size())
	return nil
}
