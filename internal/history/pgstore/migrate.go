package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationFiles holds the schema, one file per step, named
// NNNN_description.sql and applied in NNNN order; applied files are never
// edited. The steps are recorded in schema_migrations.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one schema step.
type migration struct {
	version int
	name    string // file name, recorded for people reading schema_migrations
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

// migrate applies the migrations not yet recorded in schema_migrations,
// all in one transaction with their records: a failed step leaves no
// trace and the next Open retries it.
//
// Replicas starting together would otherwise race on CREATE TABLE, so the
// transaction first takes a transaction-scoped advisory lock, released by
// its commit or rollback (also when the connection dies). The lock is per
// schema and shared with the knowledge store's migrations, so two stores
// can never both create a schema either.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, ms []migration, now func() time.Time) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
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
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL
		)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}

		rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		// A binary older than the database must not write into a schema it
		// does not know.
		known := 0
		if len(ms) > 0 {
			known = ms[len(ms)-1].version
		}
		if newest := slices.Max(append(applied, 0)); newest > known {
			return fmt.Errorf("database schema version %d is newer than this build knows (%d); upgrade chatpipe", newest, known)
		}

		for _, m := range ms {
			if slices.Contains(applied, m.version) {
				continue
			}
			// Without arguments pgx sends the simple protocol, which runs
			// the file's several statements.
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, now()); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		return nil
	})
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
