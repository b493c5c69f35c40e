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
// edited. The steps are recorded in knowledge_migrations, not in the
// history store's schema_migrations: the two stores may share a schema
// but version their tables independently.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrate applies the migrations not yet recorded in knowledge_migrations,
// all in one transaction with their records, under the lock the history
// store's migrations take too (pgdb.Migrate). In the same transaction it
// then tries to enable pgvector and reports whether vector search can use
// it.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, ms []migrations.Migration, now func() time.Time) (pgvector bool, err error) {
	steps := pgdb.Steps{Table: "knowledge_migrations", Name: "knowledge", All: ms}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := pgdb.Migrate(ctx, tx, schema, steps, now); err != nil {
			return err
		}
		pgvector, err = enablePgvector(ctx, tx)
		return err
	})
	return pgvector, err
}
