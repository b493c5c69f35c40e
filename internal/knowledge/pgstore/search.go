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
// terms (the title, heading and content terms of each chunk) by ts_rank
// with normalisation 1: each query term found adds to a chunk's score,
// its repeats less and less (as bm25 saturates a term's frequency), and
// the sum is divided by 1 + ln(the number of terms in the chunk), so a
// long chunk does not win by length alone. Unlike bm25 the score has no
// inverse document frequency; English function words are already out of
// the query (knowledge.QueryTerms).
//
// ts_rank, not ts_rank_cd: cover density adds every occurrence in full,
// so a chunk repeating one common query term outranks one matching
// several. Over the samples' labelled questions, keyword recall@3 is 0.94
// with ts_rank (every normalisation but 2, 6 and 8; SQLite's bm25: 0.94)
// and 0.84 to 0.90 with ts_rank_cd (see recall_test.go).
//
// The query is never parsed as syntax (see termsExpression). The tenants
// are kept before the limit, so other tenants' chunks never take a place,
// and only the kept, best `limit` chunks are joined with their documents.
func (s *Store) KeywordSearch(ctx context.Context, tenantIDs []string, query string, limit int) ([]knowledge.Hit, error) {
	return s.KeywordSearchTerms(ctx, tenantIDs, knowledge.WordQueryTerms(query), limit)
}

// KeywordSearchTerms is KeywordSearch for terms given as they are (see
// knowledge.Store.KeywordSearchTerms): KeywordSearches of one ranking.
func (s *Store) KeywordSearchTerms(ctx context.Context, tenantIDs, terms []string, limit int) ([]knowledge.Hit, error) {
	if len(terms) == 0 {
		return nil, nil // no terms, not a question to read terms from
	}
	out, err := s.KeywordSearches(ctx, tenantIDs, []knowledge.KeywordQuery{{Terms: terms}}, limit)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

var _ knowledge.TitleSearcher = (*Store)(nil)

// KeywordSearchTitleTerms is KeywordSearchTerms restricted to matches in
// the title field, a document's title and lead (knowledge.TitleSearcher):
// the lexemes labelled B (termsSQL).
func (s *Store) KeywordSearchTitleTerms(ctx context.Context, tenantIDs, terms []string, limit int) ([]knowledge.Hit, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	out, err := s.KeywordSearches(ctx, tenantIDs, []knowledge.KeywordQuery{{Terms: terms, TitleOnly: true}}, limit)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// keywordSQL ranks the chunks of tenants ($2) matching the tsquery $1,
// best $3 first.
const keywordSQL = `
	SELECT c.id, c.document_id, d.title, c.heading, c.page, c.content, c.idx, m.score
	FROM (SELECT seq, ts_rank(terms, q, 1) AS score
	      FROM knowledge_chunks, to_tsquery('simple', $1) AS q
	      WHERE tenant_id = ANY ($2) AND terms @@ q
	      ORDER BY score DESC, seq LIMIT $3) AS m
	JOIN knowledge_chunks c ON c.seq = m.seq
	JOIN knowledge_documents d ON d.id = c.document_id
	ORDER BY m.score DESC, m.seq`

// KeywordSearches runs a search's keyword rankings (the question's, its
// English bridge's, its expansion's) in one read-only REPEATABLE READ
// transaction, sent as one batch: they see one state of the knowledge
// base, so a document added or deleted meanwhile is in all of them or in
// none (one query each, at READ COMMITTED, could fuse rankings of two
// states). A title-only ranking matches the title field's lexemes alone
// (titleTermsExpression).
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
		expr := termsExpression(terms)
		if q.TitleOnly {
			expr = titleTermsExpression(terms)
		}
		if expr == "" {
			continue
		}
		batch.Queue(keywordSQL, expr, tenants, min(limit, maxLimit)).Query(func(rows pgx.Rows) error {
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
