package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chatpipe/chatpipe/internal/migrations"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
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

// migrate applies the migrations not yet recorded, each in its own
// transaction together with its record, so a failed step leaves no trace
// and is retried at the next Open. db must be the writer: its
// transactions begin IMMEDIATE, so two processes opening one file cannot
// both apply a step.
func migrate(ctx context.Context, db *sql.DB, ms []migrations.Migration, now func() time.Time) error {
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
	if err := migrations.RefuseNewer("knowledge", int(newest.Int64), ms); err != nil {
		return err
	}

	for _, m := range ms {
		if err := applyMigration(ctx, db, m, now()); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
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
func applyMigration(ctx context.Context, db *sql.DB, m migrations.Migration, now time.Time) (err error) {
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
			err = errors.Join(err, sqlitedb.IgnoreDone(tx.Rollback()))
		}
	}()

	var applied bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+migrationsTable+` WHERE version = ?)`,
		m.Version).Scan(&applied); err != nil {
		return err
	}
	if applied {
		return tx.Rollback()
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	if err := checkForeignKeys(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+migrationsTable+` (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, sqlitedb.FormatTime(now)); err != nil {
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
