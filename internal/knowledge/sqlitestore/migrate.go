package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// migrationFiles holds the schema, one file per step, named
// NNNN_description.sql and applied in NNNN order; applied files are never
// edited. The steps are recorded in knowledge_migrations, not in the
// history store's schema_migrations: the two stores share a database file
// but version their schemas independently.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationsTable records the applied steps.
const migrationsTable = "knowledge_migrations"

// migration is one schema step.
type migration struct {
	version int
	name    string // file name, recorded for people reading knowledge_migrations
	sql     string
}

// loadMigrations reads migrations/*.sql from fsys, ordered by version.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	ms := make([]migration, 0, len(names))
	for _, name := range names {
		base := path.Base(name)
		prefix, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", base)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(body)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", ms[i-1].name, ms[i].name, ms[i].version)
		}
	}
	return ms, nil
}

// migrate applies the migrations not yet recorded, each in its own
// transaction together with its record, so a failed step leaves no trace
// and is retried at the next Open. db must be the writer: its
// transactions begin IMMEDIATE, so two processes opening one file cannot
// both apply a step.
func migrate(ctx context.Context, db *sql.DB, ms []migration, now func() time.Time) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migrationsTable+` (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return fmt.Errorf("create %s: %w", migrationsTable, err)
	}

	// A binary older than the database must not write into a schema it
	// does not know.
	var newest sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM `+migrationsTable).Scan(&newest); err != nil {
		return fmt.Errorf("read knowledge schema version: %w", err)
	}
	known := 0
	if len(ms) > 0 {
		known = ms[len(ms)-1].version
	}
	if int(newest.Int64) > known {
		return fmt.Errorf("knowledge schema version %d is newer than this build knows (%d); upgrade chatpipe", newest.Int64, known)
	}

	for _, m := range ms {
		if err := applyMigration(ctx, db, m, now()); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return nil
}

// applyMigration applies m unless it is recorded, on one connection with
// foreign keys off: a step may rebuild a table the way SQLite documents
// (create the new table, copy, drop the old, rename), and dropping a parent
// with foreign keys on would delete its children. The setting cannot change
// inside a transaction, so it is turned off before and back on after, and
// the step commits only when PRAGMA foreign_key_check finds nothing.
func applyMigration(ctx context.Context, db *sql.DB, m migration, now time.Time) (err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		return err
	}
	defer func() {
		// Even when ctx has ended: the connection goes back to the pool.
		if _, onErr := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`); onErr != nil {
			err = errors.Join(err, fmt.Errorf("turn foreign keys back on: %w", onErr))
		}
	}()

	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()

	var applied bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+migrationsTable+` WHERE version = ?)`,
		m.version).Scan(&applied); err != nil {
		return err
	}
	if applied {
		return tx.Rollback()
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if err := checkForeignKeys(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+migrationsTable+` (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, formatTime(now)); err != nil {
		return err
	}
	return tx.Commit()
}

// checkForeignKeys fails when a row of a knowledge table refers to a row
// that does not exist. The history store's tables, in the same file, are
// its own business.
func checkForeignKeys(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `PRAGMA foreign_key_check`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fkid int
		if err := rows.Scan(&table, &rowid, &parent, &fkid); err != nil {
			return err
		}
		if strings.HasPrefix(table, "knowledge_") {
			return fmt.Errorf("a row of %s (rowid %d) refers to a missing row of %s", table, rowid.Int64, parent)
		}
	}
	return rows.Err()
}

// ignoreDone drops the error of rolling back a transaction that already
// ended.
func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
