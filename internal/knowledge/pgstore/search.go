package pgstore

import (
	"cmp"
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/vectorindex"
)

// maxLimit bounds the hits one search returns.
const maxLimit = 1000

// KeywordSearch ranks the tenants' chunks matching any of the query's
// terms (the title, heading and content terms of each chunk) by a score
// in the manner of bm25 (keywordSQL): each query term a chunk holds adds
// its ts_rank there, which grows with the term's occurrences less and
// less and counts one in the title field (title and lead) twice one in
// the text, times the term's inverse document frequency among the
// tenants' chunks, so a rare term outweighs a common one. Unlike bm25 it
// does not divide by a chunk's length: over the third-party evaluation
// sets, ts_rank's length normalisations all ranked worse than none
// (docs/retrieval.md, "Inverse document frequency on PostgreSQL").
// English function words are already out of the query
// (knowledge.QueryTerms).
//
// ts_rank, not ts_rank_cd: cover density adds every occurrence in full,
// so a chunk repeating one common query term outranks one matching
// several.
//
// The query is never parsed as syntax (see queryOperands). The tenants
// are kept before the limit, so other tenants' chunks never take a place,
// and only the kept, best `limit` chunks are joined with their documents.
func (s *Store) KeywordSearch(ctx context.Context, tenantIDs []string, query string, limit int) ([]knowledge.Hit, error) {
	return s.KeywordSearchTerms(ctx, tenantIDs, knowledge.WordQueryTerms(query), limit)
}

// KeywordSearchTerms is KeywordSearch for terms given as they are (see
// knowledge.Store.KeywordSearchTerms).
func (s *Store) KeywordSearchTerms(ctx context.Context, tenantIDs, terms []string, limit int) ([]knowledge.Hit, error) {
	return s.keywordSearchOne(ctx, tenantIDs, knowledge.KeywordQuery{Terms: terms}, limit)
}

var _ knowledge.TitleSearcher = (*Store)(nil)

// KeywordSearchTitleTerms is KeywordSearchTerms restricted to matches in
// the title field, a document's title and lead (knowledge.TitleSearcher):
// the lexemes labelled B (termsSQL).
func (s *Store) KeywordSearchTitleTerms(ctx context.Context, tenantIDs, terms []string, limit int) ([]knowledge.Hit, error) {
	return s.keywordSearchOne(ctx, tenantIDs, knowledge.KeywordQuery{Terms: terms, TitleOnly: true}, limit)
}

// keywordSearchOne is KeywordSearches of one ranking; no terms find
// nothing (not a question to read terms from).
func (s *Store) keywordSearchOne(ctx context.Context, tenantIDs []string, q knowledge.KeywordQuery, limit int) ([]knowledge.Hit, error) {
	if len(q.Terms) == 0 {
		return nil, nil
	}
	out, err := s.KeywordSearches(ctx, tenantIDs, []knowledge.KeywordQuery{q}, limit)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// keywordSQL ranks the chunks of tenants ($1) matching any of the
// to_tsquery operands $3, best $2 first: a chunk scores, for each operand
// it matches, ts_rank (weights D 0.1, B — the title field — 0.2; no
// length normalisation) times ln(1 + (N − df + 0.5) / (df + 0.5)), N the
// tenants' chunks (their documents' chunk counts, read from the small
// table) and df the chunks of the tenants matching the operand (counted
// from the same scan). Each operand is one GIN index scan, so only the
// chunks holding it are ranked for it.
var keywordSQL = rankingSQL("k.terms")

// titleKeywordSQL is keywordSQL for operands restricted to the title
// field (':B'): they select the chunks by their title field, and
// ts_rank, which scores every occurrence of a lexeme whatever its label,
// is given the title field's lexemes alone, so the text's occurrences
// count for nothing (as in SQLite's title-column search).
var titleKeywordSQL = rankingSQL("ts_filter(k.terms, '{b}')")

// rankingSQL is keywordSQL ranking the chunks' vector as given.
func rankingSQL(vector string) string {
	return `
	WITH n AS (
		SELECT coalesce(sum(chunk_count), 0)::float8 AS n FROM knowledge_documents WHERE tenant_id = ANY ($1)),
	hits AS (
		SELECT x.i, k.seq, ts_rank('{0.1, 0.2, 0.2, 1.0}', ` + vector + `, tq, 0) AS r
		FROM unnest($3::text[]) WITH ORDINALITY AS x(t, i), to_tsquery('simple', t) AS tq,
		     LATERAL (SELECT seq, terms FROM knowledge_chunks WHERE tenant_id = ANY ($1) AND terms @@ tq) AS k),
	scored AS (
		SELECT seq, r * ln(1 + greatest(n.n - count(*) OVER w + 0.5, 0) / (count(*) OVER w + 0.5)) AS s
		FROM hits, n WINDOW w AS (PARTITION BY i)),
	m AS (SELECT seq, sum(s) AS score FROM scored GROUP BY seq ORDER BY score DESC, seq LIMIT $2)
	SELECT c.id, c.document_id, d.title, c.heading, c.page, c.content, c.idx, m.score
	FROM m
	JOIN knowledge_chunks c ON c.seq = m.seq
	JOIN knowledge_documents d ON d.id = c.document_id
	ORDER BY m.score DESC, m.seq`
}

// KeywordSearches runs a search's keyword rankings (the question's, its
// English bridge's, its expansion's) in one read-only REPEATABLE READ
// transaction, sent as one batch: they see one state of the knowledge
// base, so a document added or deleted meanwhile is in all of them or in
// none (one query each, at READ COMMITTED, could fuse rankings of two
// states). A title-only ranking matches and scores the title field's
// lexemes alone (labelled B, termsSQL; titleKeywordSQL).
func (s *Store) KeywordSearches(ctx context.Context, tenantIDs []string, queries []knowledge.KeywordQuery, limit int) ([][]knowledge.Hit, error) {
	out := make([][]knowledge.Hit, len(queries))
	tenants := knowledge.TenantList(tenantIDs)
	if len(tenants) == 0 || limit <= 0 {
		return out, nil
	}
	var batch pgx.Batch
	for i, q := range queries {
		terms := q.Terms
		if terms == nil {
			terms = knowledge.WordQueryTerms(q.Query)
		}
		sql, label := keywordSQL, ""
		if q.TitleOnly {
			sql, label = titleKeywordSQL, ":B"
		}
		operands := queryOperands(terms, label)
		if operands == nil {
			continue
		}
		batch.Queue(sql, tenants, min(limit, maxLimit), operands).Query(func(rows pgx.Rows) error {
			hits, err := collectHits(rows)
			out[i] = hits
			return err
		})
	}
	if batch.Len() == 0 {
		return out, nil
	}
	if batch.Len() == 1 { // one statement is one snapshot already
		if err := s.pool.SendBatch(ctx, &batch).Close(); err != nil {
			return nil, fmt.Errorf("knowledge: keyword search: %w", err)
		}
		return out, nil
	}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error { return tx.SendBatch(ctx, &batch).Close() })
	if err != nil {
		return nil, fmt.Errorf("knowledge: keyword search: %w", err)
	}
	return out, nil
}

// collectHits reads hits (id, document_id, title, heading, page, content,
// idx, score), nil when there are none.
func collectHits(rows pgx.Rows) ([]knowledge.Hit, error) {
	var hits []knowledge.Hit
	return pgx.AppendRows(hits, rows, func(row pgx.CollectableRow) (knowledge.Hit, error) {
		var h knowledge.Hit
		err := row.Scan(&h.ChunkID, &h.DocumentID, &h.Title, &h.Heading, &h.Page, &h.Content, &h.ChunkIndex, &h.Score)
		return h, err
	})
}

// VectorSearch ranks the tenant's embedded chunks by cosine similarity to
// vector: with pgvector on the server, through the HNSW index of the
// vector's dimension (approximately, see pgvector.go); otherwise exactly,
// over the in-memory copy of the tenant's vectors.
func (s *Store) VectorSearch(ctx context.Context, tenantID string, vector []float32, limit int) ([]knowledge.Hit, error) {
	q := vectorindex.Normalize(vector)
	if q == nil || limit <= 0 {
		return nil, nil
	}
	tenantID = cmp.Or(tenantID, knowledge.DefaultTenant)
	limit = min(limit, maxLimit)
	if s.pgvector {
		return s.pgvectorSearch(ctx, tenantID, q, limit)
	}
	if err := s.syncVectors(ctx); err != nil {
		return nil, fmt.Errorf("knowledge: vector search: %w", err)
	}
	found := s.vectors.Search(tenantID, q, limit)
	if len(found) == 0 {
		return nil, nil
	}
	seqs := make([]int64, len(found))
	for i, f := range found {
		seqs[i] = f.Seq
	}
	// The tenant again: defence in depth, seqs are never reused.
	rows, err := s.pool.Query(ctx, `
		SELECT c.seq, c.id, c.document_id, d.title, c.heading, c.page, c.content, c.idx
		FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
		WHERE c.seq = ANY ($1) AND c.tenant_id = $2`, seqs, tenantID)
	if err != nil {
		return nil, fmt.Errorf("knowledge: vector search: %w", err)
	}
	bySeq := make(map[int64]knowledge.Hit, len(found))
	var (
		seq int64
		h   knowledge.Hit
	)
	_, err = pgx.ForEachRow(rows, []any{&seq, &h.ChunkID, &h.DocumentID, &h.Title, &h.Heading, &h.Page, &h.Content, &h.ChunkIndex},
		func() error { bySeq[seq] = h; return nil })
	if err != nil {
		return nil, fmt.Errorf("knowledge: vector search: %w", err)
	}
	hits := make([]knowledge.Hit, 0, len(found))
	for _, f := range found {
		if h, ok := bySeq[f.Seq]; ok { // gone if deleted since the copy was synced
			h.Score = f.Score
			hits = append(hits, h)
		}
	}
	if len(hits) == 0 {
		return nil, nil
	}
	return hits, nil
}
