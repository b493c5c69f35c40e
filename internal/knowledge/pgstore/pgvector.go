package pgstore

// The pgvector path: when the server has the pgvector extension (and
// Options.NoPgvector is not set), vector search runs there, through an
// HNSW index, and no replica keeps an in-memory copy of the embeddings or
// reloads it after another replica's writes.
//
// The embeddings stay real[]: the schema and the migrations are the same
// with and without the extension, a server may gain the extension later,
// and both paths can run against one database. What pgvector adds is one
// expression index per embedding dimension,
//
//	CREATE INDEX knowledge_chunks_hnsw_<d> ON knowledge_chunks
//	USING hnsw ((embedding::vector(<d>)) vector_cosine_ops)
//	WHERE cardinality(embedding) = <d>
//
// created in the transaction that stores the first embedding of that
// dimension (or, for dimensions stored before, at Open): the dimension
// varies per deployment (the embedding model decides it) and an HNSW
// index needs a fixed one. Dimensions above pgvector's 2,000 for vector
// are indexed as halfvec (up to 4,000); larger ones are not indexed and
// are searched exactly, by a scan.
//
// HNSW is approximate: a search explores hnsw.ef_search candidates
// (Options.EfSearch) rather than every vector, so a true neighbour can be
// missed (see knowledge.Store.VectorSearch). The tenant filter uses
// pgvector's iterative scans (hnsw.iterative_scan, pgvector 0.8), so a
// tenant's chunks are not lost because other tenants' filled the first
// candidate list; the planner picks the tenant's own index and an exact
// sort instead when the tenant has few chunks.

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

const (
	// DefaultEfSearch is hnsw.ef_search when Options.EfSearch is 0:
	// pgvector's default (40) misses more; past ~200 the search is slower
	// for little recall (measured in BenchmarkSearch100kChunks).
	DefaultEfSearch = 100
	// maxVectorDims and maxHalfvecDims are what pgvector's HNSW indexes
	// (vector and halfvec) accept.
	maxVectorDims  = 2000
	maxHalfvecDims = 4000
)

// extension is where pgvector is usable from: the quoted schema it lives
// in ("" when the store does not use it) and why not when it does not.
type extension struct {
	schema string // pgx.Identifier-quoted; every type and operator is qualified with it
	reason string // why vector search is not on pgvector, for the log
}

// enablePgvector finds the pgvector extension or creates it where the
// server has it available, in tx (the migration transaction, after the
// migrations). It is created in the database's public schema when there
// is one: an extension belongs to one schema of the database, and a
// store's own schema may be dropped with everything in it (tests drop
// theirs), which must not drop the extension under every other schema's
// indexes. CREATE EXTENSION runs in a savepoint: failing (for want of
// the privilege: pgvector is not a trusted extension) would abort the
// migration transaction. A database-wide advisory lock keeps two stores
// on different schemas from creating it at once.
func enablePgvector(ctx context.Context, tx pgx.Tx) (extension, error) {
	schema, err := pgvectorSchema(ctx, tx)
	if err != nil || schema != "" {
		return extension{schema: schema}, err
	}
	var available bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`).
		Scan(&available); err != nil {
		return extension{}, err
	}
	if !available {
		return extension{reason: "pgvector not installed"}, nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('chatpipe: create extension vector', 0))`); err != nil {
		return extension{}, err
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return extension{}, err
	}
	if _, err := sp.Exec(ctx, `DO $$ BEGIN
		IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'public') THEN
			CREATE EXTENSION IF NOT EXISTS vector SCHEMA public;
		ELSE
			CREATE EXTENSION IF NOT EXISTS vector;
		END IF;
	END $$`); err != nil {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) { // the connection, not the server, failed
			return extension{}, errors.Join(err, sp.Rollback(ctx))
		}
		return extension{reason: "pgvector available but not enabled: " + pe.Message}, sp.Rollback(ctx)
	}
	if err := sp.Commit(ctx); err != nil {
		return extension{}, err
	}
	schema, err = pgvectorSchema(ctx, tx)
	return extension{schema: schema}, err
}

// pgvectorSchema is the quoted schema of the vector extension, "" when it
// is not created in this database.
func pgvectorSchema(ctx context.Context, q querier) (string, error) {
	var schema string
	err := q.QueryRow(ctx, `SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname = 'vector'`).Scan(&schema)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", nil
	case err != nil:
		return "", err
	}
	return pgx.Identifier{schema}.Sanitize(), nil
}

// vectorType is the pgvector type embeddings of dims dimensions are cast
// to, and whether an HNSW index can hold them.
func (e extension) vectorType(dims int) (typ string, indexable bool) {
	switch {
	case dims <= maxVectorDims:
		return e.schema + ".vector(" + strconv.Itoa(dims) + ")", true
	case dims <= maxHalfvecDims:
		return e.schema + ".halfvec(" + strconv.Itoa(dims) + ")", true
	default:
		return e.schema + ".vector(" + strconv.Itoa(dims) + ")", false
	}
}

// ensureIndex creates the HNSW index of dims-dimensional embeddings
// unless it exists, and reports whether it did. The name, expression and
// predicate must stay what pgvectorSearch queries, or the planner does
// not use it.
func (e extension) ensureIndex(ctx context.Context, tx pgx.Tx, dims int) (created bool, err error) {
	typ, indexable := e.vectorType(dims)
	if !indexable {
		return false, nil
	}
	name := "knowledge_chunks_hnsw_" + strconv.Itoa(dims)
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{name}.Sanitize()).Scan(&exists); err != nil || exists {
		return false, err
	}
	ops := e.schema + ".vector_cosine_ops"
	if dims > maxVectorDims {
		ops = e.schema + ".halfvec_cosine_ops"
	}
	if _, err := tx.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+pgx.Identifier{name}.Sanitize()+` ON knowledge_chunks
		USING hnsw ((embedding::`+typ+`) `+ops+`) WHERE cardinality(embedding) = `+strconv.Itoa(dims)); err != nil {
		return false, fmt.Errorf("create the HNSW index of %d-dimensional embeddings: %w", dims, err)
	}
	return true, nil
}

// pgvectorSearch is VectorSearch on the server. q is unit length and not
// zero (vectorindex.Normalize). The dimension is part of the SQL text, not
// a parameter: the planner must see the index's predicate
// (cardinality = d) in the query to use that partial index.
//
// The nearest `limit` come from the index in a materialized CTE; only then
// are those with a similarity of 0 or less (distance ≥ 1, or NaN for a
// zero embedding) dropped: filtering on the distance inside would make an
// iterative scan walk the whole graph looking for more.
//
// QueryExecModeExec plans every search with its tenant (an unnamed
// statement), so the planner can prefer the tenant's btree index and an
// exact sort for a tenant with few chunks; a cached generic plan would use
// HNSW for every tenant, and a small tenant's chunks could lie beyond
// hnsw.max_scan_tuples.
func (s *Store) pgvectorSearch(ctx context.Context, tenantID string, q []float32, limit int) ([]knowledge.Hit, error) {
	return s.pgvectorSearchOn(ctx, s.pool, tenantID, q, limit)
}

// rowsQuerier is a pool or a connection (tests pin one to change its
// planner settings).
type rowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (s *Store) pgvectorSearchOn(ctx context.Context, db rowsQuerier, tenantID string, q []float32, limit int) ([]knowledge.Hit, error) {
	typ, _ := s.ext.vectorType(len(q))
	rows, err := db.Query(ctx, `
		WITH nearest AS MATERIALIZED (
			SELECT seq, embedding::`+typ+` OPERATOR(`+s.ext.schema+`.<=>) $1::real[]::`+typ+` AS distance
			FROM knowledge_chunks
			WHERE tenant_id = $2 AND cardinality(embedding) = `+strconv.Itoa(len(q))+`
			ORDER BY distance
			LIMIT $3)
		SELECT c.id, c.document_id, d.title, c.heading, c.page, c.content, c.idx, 1 - n.distance
		FROM nearest n
		JOIN knowledge_chunks c ON c.seq = n.seq
		JOIN knowledge_documents d ON d.id = c.document_id
		WHERE n.distance < 1
		ORDER BY n.distance, n.seq`,
		pgx.QueryExecModeExec, q, tenantID, limit)
	if err != nil {
		return nil, fmt.Errorf("knowledge: vector search: %w", err)
	}
	hits, err := collectHits(rows)
	if err != nil {
		return nil, fmt.Errorf("knowledge: vector search: %w", err)
	}
	return hits, nil
}
