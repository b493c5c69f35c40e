package pgstore

import (
	"context"
	"embed"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chatpipe/chatpipe/internal/migrations"
	"github.com/chatpipe/chatpipe/internal/pgdb"
)

// migrationFiles holds the schema, one file per step, named
// NNNN_description.sql and applied in NNNN order; applied files are never
// edited. The steps are recorded in schema_migrations.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrate applies the migrations not yet recorded in schema_migrations,
// all in one transaction with their records, under the lock the knowledge
// store's migrations take too (pgdb.Migrate).
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, ms []migrations.Migration, now func() time.Time) error {
	steps := pgdb.Steps{Table: "schema_migrations", Name: "database", All: ms}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return pgdb.Migrate(ctx, tx, schema, steps, now)
	})
}
