package pgstore

import (
	"context"
	"embed"
	"fmt"
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
// store's migrations take too (pgdb.Migrate). In the same transaction,
// at every Open (a server may gain pgvector after the migrations ran), it
// then enables pgvector unless opts.NoPgvector, creates the HNSW index of
// every embedding dimension stored so far that lacks one, and returns the
// extension (its schema empty when vector search stays on real[]) and the
// dimensions.
func migrate(ctx context.Context, pool *pgxpool.Pool, opts Options, ms []migrations.Migration, now func() time.Time) (ext extension, dims map[int]bool, err error) {
	steps := pgdb.Steps{Table: "knowledge_migrations", Name: "knowledge", All: ms}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := pgdb.Migrate(ctx, tx, opts.Schema, steps, now); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT dims FROM knowledge_embedding_dims`)
		if err != nil {
			return err
		}
		stored, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return err
		}
		if opts.NoPgvector {
			ext = extension{reason: "pgvector off by configuration"}
		} else if ext, err = enablePgvector(ctx, tx); err != nil {
			return fmt.Errorf("enable pgvector: %w", err)
		}
		dims = make(map[int]bool, len(stored))
		indexed := false
		for _, d := range stored {
			if ext.schema != "" {
				created, err := ext.ensureIndex(ctx, tx, d)
				if err != nil {
					return err
				}
				indexed = indexed || created
			}
			dims[d] = true
		}
		if indexed {
			// Chunks stored before the index need statistics now: without
			// them (autovacuum may not have run yet after a bulk load) the
			// planner guesses the tenant small and sorts all of its chunks
			// exactly instead of using the index (seconds at 100,000).
			if _, err := tx.Exec(ctx, `ANALYZE knowledge_chunks`); err != nil {
				return fmt.Errorf("analyze knowledge_chunks: %w", err)
			}
		}
		return nil
	})
	return ext, dims, err
}
