package pgstore

// The pgvector path: when the server has the pgvector extension, vector
// search runs there, exactly (a sequential scan of the tenant's chunks;
// an approximate index would break the Store's "exactly"), and no replica
// keeps an in-memory copy of the embeddings or reloads it after another
// replica's writes. The embeddings stay real[], cast per query, so the
// schema and the migrations are the same with and without it.
//
// Everything pgvector-specific is in this file. It is untested where
// pgvector is not installed (Debian 12's PostgreSQL has no package), which
// is where CI runs: there Open falls back to vectors.go.

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// enablePgvector creates the extension if the server has it and reports
// whether the type vector is usable from this schema. CREATE EXTENSION
// runs in a savepoint: failing (for want of the privilege) would abort the
// migration transaction.
func enablePgvector(ctx context.Context, tx pgx.Tx) (bool, error) {
	var available bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`).
		Scan(&available); err != nil || !available {
		return false, err
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false, err
	}
	if _, err := sp.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) { // the connection, not the server, failed
			return false, errors.Join(err, sp.Rollback(ctx))
		}
		return false, sp.Rollback(ctx)
	}
	if err := sp.Commit(ctx); err != nil {
		return false, err
	}
	// Created in another schema earlier, it may not be on our search_path.
	var usable bool
	err = tx.QueryRow(ctx, `SELECT to_regtype('vector') IS NOT NULL`).Scan(&usable)
	return usable, err
}

// pgvectorSearch is VectorSearch on the server. q is unit length and not
// zero (vectorindex.Normalize), so no similarity is NaN.
func (s *Store) pgvectorSearch(ctx context.Context, tenantID string, q []float32, limit int) ([]knowledge.Hit, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, document_id, title, heading, page, content, idx, score FROM (
			SELECT c.id, c.document_id, d.title, c.heading, c.page, c.content, c.idx, c.seq,
			       1 - (c.embedding::vector <=> $1::real[]::vector) AS score
			FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
			WHERE c.tenant_id = $2 AND cardinality(c.embedding) = $3
		) AS scored
		WHERE score > 0 AND score <> 'NaN'
		ORDER BY score DESC, seq
		LIMIT $4`, q, tenantID, len(q), limit)
	if err != nil {
		return nil, fmt.Errorf("knowledge: vector search: %w", err)
	}
	hits, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (knowledge.Hit, error) {
		var h knowledge.Hit
		err := row.Scan(&h.ChunkID, &h.DocumentID, &h.Title, &h.Heading, &h.Page, &h.Content, &h.ChunkIndex, &h.Score)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("knowledge: vector search: %w", err)
	}
	if len(hits) == 0 {
		return nil, nil
	}
	return hits, nil
}
