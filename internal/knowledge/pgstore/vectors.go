package pgstore

// The in-memory vector index (package vectorindex, as in the SQLite
// store). Each replica keeps its own copy and reloads it whenever the
// store's version moved without it (another replica wrote).

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/chatpipe/chatpipe/internal/knowledge/vectorindex"
)

// reloadVectors replaces the in-memory copy with what the database holds.
func (s *Store) reloadVectors(ctx context.Context) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.reloadVectorsLocked(ctx)
}

func (s *Store) reloadVectorsLocked(ctx context.Context) error {
	// One snapshot for the version and the vectors.
	var (
		version int64
		snap    vectorindex.Snapshot
	)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if version, err = readVersion(ctx, tx); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT seq, tenant_id, embedding FROM knowledge_chunks WHERE embedding IS NOT NULL`)
		if err != nil {
			return err
		}
		var (
			seq      int64
			tenantID string
			v        []float32
		)
		_, err = pgx.ForEachRow(rows, []any{&seq, &tenantID, &v}, func() error {
			snap.Add(tenantID, seq, v)
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("load embeddings: %w", err)
	}
	s.vectors.Replace(version, &snap)
	return nil
}

// syncVectors reloads the in-memory copy when the version moved without
// it: another replica changed the knowledge base (this process's own
// writes keep it current).
func (s *Store) syncVectors(ctx context.Context) error {
	version := func(ctx context.Context) (int64, error) { return readVersion(ctx, s.pool) }
	return s.vectors.Sync(ctx, &s.writeMu, version, s.reloadVectorsLocked)
}
