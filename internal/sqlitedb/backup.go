package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of db to dest with VACUUM INTO, which
// reads one snapshot through SQLite's own locking: it is safe while a
// server writes to the database, and it never touches the server's -wal
// and -shm files. The copy is compact, readable by its owner only, and a
// database file on its own (no -wal to carry along). dest must not exist:
// an older backup is never overwritten. On failure no partial file is
// left behind.
func Backup(ctx context.Context, db *DB, dest string) (err error) {
	if dest == "" {
		return errors.New("backup: empty destination path")
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o750); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	// VACUUM INTO accepts an existing empty file; creating it first gives
	// the copy its private mode and refuses to overwrite anything.
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(dest)
		}
	}()
	// The readers are query_only, which refuses VACUUM INTO, and the
	// writer must stay free for the server: a connection of its own, which
	// SQLite opens and closes (so the process keeps its locks; see
	// registry). A private in-memory database has only its one pool.
	conn := db.Writer
	if db.file != nil {
		if conn, err = sql.Open("sqlite", db.path+commonPragmas()); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		defer conn.Close()
	}
	if _, err := conn.ExecContext(ctx, `VACUUM INTO ?`, dest); err != nil {
		return fmt.Errorf("backup: vacuum into %s: %w", dest, err)
	}
	return nil
}
