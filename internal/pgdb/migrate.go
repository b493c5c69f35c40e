package pgdb

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chatpipe/chatpipe/internal/migrations"
)

// Steps are a store's migrations and where they are recorded.
type Steps struct {
	// Table records the applied steps (version, name, applied_at). Each
	// store has its own, so stores sharing a schema version their tables
	// independently.
	Table string
	// Name names the store's tables in errors: "database", "knowledge".
	Name string
	All  []migrations.Migration
}

// Migrate applies, in tx, the steps Table does not record yet, each with
// its record: when the caller's transaction fails, no step leaves a trace
// and the next Open retries it. schema is Options.Schema: created first
// when set and missing; "" keeps the search_path's.
//
// Replicas starting together would otherwise race on CREATE TABLE, so the
// transaction first takes a transaction-scoped advisory lock, released by
// its commit or rollback (also when the connection dies). The lock is per
// schema and every store takes the same one, so two stores can never
// both create a schema either.
func Migrate(ctx context.Context, tx pgx.Tx, schema string, steps Steps, now func() time.Time) error {
	// NULL (no Options.Schema) locks the schema the tables land in.
	var schemaArg any
	if schema != "" {
		schemaArg = schema
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(
		hashtextextended('chatpipe migrations: ' || coalesce($1::text, current_schema(), ''), 0))`,
		schemaArg); err != nil {
		return fmt.Errorf("lock migrations: %w", err)
	}
	if schema != "" {
		if err := createSchema(ctx, tx, schema); err != nil {
			return err
		}
	}
	table := pgx.Identifier{steps.Table}.Sanitize()
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL
	)`); err != nil {
		return fmt.Errorf("create %s: %w", steps.Table, err)
	}

	rows, err := tx.Query(ctx, `SELECT version FROM `+table)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if err := migrations.RefuseNewer(steps.Name, slices.Max(append(applied, 0)), steps.All); err != nil {
		return err
	}

	for _, m := range steps.All {
		if slices.Contains(applied, m.Version) {
			continue
		}
		// Without arguments pgx sends the simple protocol, which runs the
		// file's several statements.
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (version, name, applied_at) VALUES ($1, $2, $3)`,
			m.Version, m.Name, now()); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// createSchema creates schema unless it exists. It checks first because
// CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege on the
// database, which a role given an existing schema may lack.
func createSchema(ctx context.Context, tx pgx.Tx, schema string) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`,
		schema).Scan(&exists); err != nil {
		return fmt.Errorf("look up schema %q: %w", schema, err)
	}
	if exists {
		return nil
	}
	if _, err := tx.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("create schema %q: %w", schema, err)
	}
	return nil
}
