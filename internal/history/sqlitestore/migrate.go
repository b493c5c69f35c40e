package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/chatpipe/chatpipe/internal/migrations"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

// migrationFiles holds the schema, one file per step, named
// NNNN_description.sql and applied in NNNN order. A later feature (the
// knowledge base) adds its tables by adding a file; applied files are
// never edited.
//
// Each file runs in one transaction. PRAGMA foreign_keys cannot change
// inside a transaction, so a file that rebuilds a table must follow
// SQLite's "generalized ALTER TABLE" procedure and end with
// PRAGMA foreign_key_check.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrate applies the migrations not yet recorded in schema_migrations,
// each in its own transaction together with its record, so a failed step
// leaves no trace and is retried at the next Open. db must be the writer:
// its transactions begin IMMEDIATE, so two processes opening one file
// cannot both apply a step.
func migrate(ctx context.Context, db *sql.DB, ms []migrations.Migration, now func() time.Time) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}

	// A binary older than the database must not write into a schema it
	// does not know.
	var newest sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&newest); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if err := migrations.RefuseNewer("database", int(newest.Int64), ms); err != nil {
		return err
	}

	for _, m := range ms {
		if err := applyMigration(ctx, db, m, now()); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, m migrations.Migration, now time.Time) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, sqlitedb.IgnoreDone(tx.Rollback()))
		}
	}()

	var applied bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?)`,
		m.Version).Scan(&applied); err != nil {
		return err
	}
	if applied {
		return tx.Rollback()
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, sqlitedb.FormatTime(now)); err != nil {
		return err
	}
	return tx.Commit()
}
