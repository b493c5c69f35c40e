package sqlitestore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/vectorindex"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

// maxLimit bounds the hits one search returns (and the parameters of the
// query that reads them).
const maxLimit = 1000

// KeywordSearch ranks the tenants' chunks by bm25 over the title, heading
// and body terms of each chunk, a match in the title field (the
// document's title and lead, knowledge.TitleText) weighing ten times one
// in the others: ten was best on the evaluation set, 3 to 20 all within
// 0.01 of it (docs/retrieval.md). The query is never passed to FTS5 as
// syntax: it is cut into knowledge.QueryTerms, each quoted, and the terms
// are ORed, so a chunk matching some of them is found and bm25 ranks
// chunks matching more (and rarer) terms higher. Neighbouring words of
// the query (knowledge.QueryProximities) found within a few terms of each
// other in a chunk add their own bm25, a fifth of a term's weight, to the
// best chunks by the terms (nearWindow; rankNear).
//
// The tenants are kept inside the match expression, before the limit:
// FTS5 ranks their chunks only (each chunk's tenant is a term of its
// index row), so other tenants' matches never take one of their places
// and are skipped rather than ranked (their terms' lists are still read:
// BenchmarkSearchBesideALargeTenant). Only the best `limit` are then read
// in full. (bm25's term statistics are the whole index's, as one
// FTS5 table serves every tenant: a score, never a hit, reflects other
// tenants' text.)
func (s *Store) KeywordSearch(ctx context.Context, tenantIDs []string, query string, limit int) ([]knowledge.Hit, error) {
	return s.keywordSearchOne(ctx, tenantIDs, knowledge.KeywordQuery{Query: query}, limit)
}

// KeywordSearchTerms is KeywordSearch for terms given as they are (see
// knowledge.Store.KeywordSearchTerms), with no proximity bonus: the terms
// are not words of a sentence.
func (s *Store) KeywordSearchTerms(ctx context.Context, tenantIDs, terms []string, limit int) ([]knowledge.Hit, error) {
	return s.keywordSearchOne(ctx, tenantIDs, knowledge.KeywordQuery{Terms: terms}, limit)
}

var (
	_ knowledge.TitleSearcher    = (*Store)(nil)
	_ knowledge.SnapshotSearcher = (*Store)(nil)
)

// KeywordSearchTitleTerms is KeywordSearchTerms restricted to matches in
// the title field (the document's title and lead, knowledge.TitleText):
// bm25 counts only the terms' title-field occurrences (see
// knowledge.TitleSearcher).
func (s *Store) KeywordSearchTitleTerms(ctx context.Context, tenantIDs, terms []string, limit int) ([]knowledge.Hit, error) {
	return s.keywordSearchOne(ctx, tenantIDs, knowledge.KeywordQuery{Terms: terms, TitleOnly: true}, limit)
}

// KeywordSearches runs the rankings of one search in one read
// transaction (see knowledge.SnapshotSearcher): they see one snapshot,
// the tenants are looked at once, and the second and later rankings find
// the index pages the first read in the connection's cache. (In WAL
// mode a connection's page cache is emptied when its next read finds a
// commit it did not make, such as a chat message saved, so a ranking run
// on another pooled connection would read them all again: docs/retrieval.md, "What a chat message costs a
// search".) A question's proximity bonus alone is read beside it, on a
// second connection, at the same time (rankNear): it only reorders the
// chunks the ranking found.
func (s *Store) KeywordSearches(ctx context.Context, tenantIDs []string, queries []knowledge.KeywordQuery, limit int) ([][]knowledge.Hit, error) {
	rankings := make([]ranking, len(queries))
	for i, q := range queries {
		switch {
		case q.TitleOnly:
			rankings[i] = ranking{titleColumn, q.Terms, nil}
		case q.Terms != nil:
			rankings[i] = ranking{textColumns, q.Terms, nil}
		default:
			rankings[i] = ranking{textColumns, knowledge.QueryTerms(q.Query), knowledge.QueryProximities(q.Query)}
		}
	}
	out, err := s.keywordSearches(ctx, knowledge.TenantList(tenantIDs), rankings, limit, false)
	if err != nil {
		return nil, fmt.Errorf("knowledge: keyword search: %w", err)
	}
	return out, nil
}

// keywordSearchOne is KeywordSearches of one query.
func (s *Store) keywordSearchOne(ctx context.Context, tenantIDs []string, q knowledge.KeywordQuery, limit int) ([]knowledge.Hit, error) {
	out, err := s.KeywordSearches(ctx, tenantIDs, []knowledge.KeywordQuery{q}, limit)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// keywordSearch ranks the chunks matching terms in their text columns,
// with the proximity bonus of pairs (nil = none); alwaysFilter keeps the
// tenant filter where it would drop nothing (for tests).
func (s *Store) keywordSearch(ctx context.Context, tenants, terms []string, pairs [][2]string, limit int, alwaysFilter bool) ([]knowledge.Hit, error) {
	out, err := s.keywordSearches(ctx, tenants, []ranking{{textColumns, terms, pairs}}, limit, alwaysFilter)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// ranking is one keyword ranking: terms matched in columns (an FTS5
// column filter: textColumns or titleColumn), with the proximity bonus of
// pairs (nil = none).
type ranking struct {
	columns string
	terms   []string
	pairs   [][2]string
}

// keywordSearches runs rankings over the tenants' chunks in one read
// transaction, best limit first each (nil for a ranking with no terms;
// with no terms at all, nothing is read).
func (s *Store) keywordSearches(ctx context.Context, tenants []string, rankings []ranking, limit int, alwaysFilter bool) ([][]knowledge.Hit, error) {
	out := make([][]knowledge.Hit, len(rankings))
	exprs := make([]string, len(rankings))
	hasTerms := false
	for i, r := range rankings {
		exprs[i] = inColumns(r.columns, matchExpression(r.terms))
		hasTerms = hasTerms || exprs[i] != ""
	}
	if !hasTerms || len(tenants) == 0 || limit <= 0 {
		return out, nil
	}
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = sqlitedb.IgnoreDone(tx.Rollback()) }()
	// When every document is one of the tenants' (one tenant, or one and
	// the shared documents: the usual case), the tenant filter is left
	// out: it would drop nothing, and reading the tenants' terms costs
	// time.
	only, err := holdsOnly(ctx, tx, tenants)
	if err != nil {
		return nil, err
	}
	filter := 0
	if !only || alwaysFilter {
		filter = len(tenants)
	}
	for i, r := range rankings {
		if exprs[i] == "" {
			continue
		}
		if near := inColumns(r.columns, proximityExpression(r.pairs)); near != "" {
			out[i], err = s.rankNear(ctx, tx, tenants, filter, exprs[i], near, limit)
		} else {
			out[i], err = rank(ctx, tx, tenants, filter, exprs[i], limit)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rank runs one ranking with no proximity bonus (rankingSQL) in tx: expr
// is its match expression, filter the number of tenants whose terms it is
// kept to (0: none, every chunk is one of the tenants').
func rank(ctx context.Context, tx *sql.Tx, tenants []string, filter int, expr string, limit int) ([]knowledge.Hit, error) {
	args := []any{expr, min(limit, maxLimit)}
	if filter > 0 {
		args[0] = forTenants(expr, tenants)
		args = append(args, anys(tenants)...)
	}
	rows, err := tx.QueryContext(ctx, rankingSQL(filter), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var hits []knowledge.Hit
	for rows.Next() {
		var h knowledge.Hit
		var bm25 float64
		if err := rows.Scan(&h.ChunkID, &h.DocumentID, &h.Title, &h.Heading, &h.Page, &h.Content, &h.ChunkIndex, &bm25); err != nil {
			return nil, err
		}
		h.Score = -bm25 // FTS5's bm25 is lower-is-better
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// proximityWeight is the weight of the proximity score in a chunk's
// score, against 1 for its terms' (see KeywordSearch): on the evaluation
// set 0.2 was best, 0.1 and 0.3 a little less good (docs/retrieval.md).
const proximityWeight = 0.2

// rankingSQL ranks in the subquery, FTS5 first (the tenants, when they
// are not every document's, are part of its match expression: see
// forTenants); only the best limit are then read in full. Parameters:
// the match expression, the limit, then the filter tenants, whose chunks
// alone the best limit are checked to be (the match expression already
// keeps to them: a second guard, on at most limit rows, against an index
// row that names a wrong tenant).
func rankingSQL(filter int) string {
	return `
	SELECT c.id, c.document_id, d.title, c.heading, c.page, c.content, c.idx, f.score
	FROM (SELECT rowid AS seq, ` + bm25 + ` AS score
	      FROM knowledge_fts WHERE knowledge_fts MATCH ?1
	      ORDER BY score LIMIT ?2) AS f
	JOIN knowledge_chunks c ON c.seq = f.seq
	JOIN knowledge_documents d ON d.id = c.document_id` + tenantCheck(filter) + `
	ORDER BY f.score, c.seq`
}

// tenantCheck is rankingSQL's WHERE on the chunks' tenants (parameters
// from ?3), "" for none.
func tenantCheck(filter int) string {
	if filter == 0 {
		return ""
	}
	return `
	WHERE c.tenant_id IN (?3` + strings.Repeat(",?", filter-1) + `)`
}

// textColumns are the keyword index's columns of text; the other one,
// tenant, holds each chunk's tenantTerm. titleColumn is the title field
// alone.
const (
	textColumns = `{title heading body}`
	titleColumn = `{title}`
)

// inColumns keeps a match expression to columns (of text: no query word
// ever matches a tenant term); "" stays "".
func inColumns(columns, expr string) string {
	if expr == "" {
		return ""
	}
	return columns + ` : (` + expr + `)`
}

// forTenants is expr limited to the chunks of tenants: FTS5 intersects
// the matches with the tenants' terms itself, so another tenant's
// matches are never ranked, however many there are.
func forTenants(expr string, tenants []string) string {
	return `(` + expr + `) AND ` + tenantMatch(tenants)
}

// tenantMatch matches the index rows of tenants' chunks.
func tenantMatch(tenants []string) string {
	terms := make([]string, len(tenants))
	for i, t := range tenants {
		terms[i] = tenantTerm(t)
	}
	return `tenant : (` + strings.Join(terms, " OR ") + `)`
}

// tenantTerm is the keyword index's term for a tenant: a hash, as a
// tenant id may hold characters the tokenizer would split on, 128 bits of
// it so that two tenants never share one.
func tenantTerm(tenantID string) string {
	h := sha256.Sum256([]byte(tenantID))
	return "t" + hex.EncodeToString(h[:16])
}

// bm25 is a chunk's keyword score, lower is better: a match in the title
// field weighs ten times one in the heading or text; the tenant column
// weighs nothing (its one term still counts in a row's length).
const bm25 = `bm25(knowledge_fts, 10.0, 1.0, 1.0, 0.0)`

// proximityExpression ORs a NEAR group of each pair of terms (see
// knowledge.QueryProximities), each term quoted as in matchExpression; ""
// when there is none.
func proximityExpression(pairs [][2]string) string {
	var b strings.Builder
	for _, p := range pairs {
		if b.Len() > 0 {
			b.WriteString(" OR ")
		}
		fmt.Fprintf(&b, `NEAR("%s" "%s", %d)`, strings.ReplaceAll(p[0], `"`, `""`), strings.ReplaceAll(p[1], `"`, `""`), knowledge.ProximityWindow)
	}
	return b.String()
}

// holdsOnly reports whether every document belongs to one of tenants:
// the tenants present are walked in the index knowledge_documents_by_tenant,
// one look-up each, stopping at the first other one.
func holdsOnly(ctx context.Context, tx *sql.Tx, tenants []string) (bool, error) {
	after := ""
	for range len(tenants) + 1 {
		var t sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT min(tenant_id) FROM knowledge_documents WHERE tenant_id > ?`, after).Scan(&t); err != nil {
			return false, err
		}
		if !t.Valid {
			return true, nil
		}
		if !slices.Contains(tenants, t.String) {
			return false, nil
		}
		after = t.String
	}
	return false, nil // not reached: tenants are distinct
}

// matchExpression ORs the terms as FTS5 strings. Terms hold letters,
// digits and marks only, but a double quote is escaped anyway (doubled),
// so no term can close its string and inject syntax.
func matchExpression(terms []string) string {
	var b strings.Builder
	for _, t := range terms {
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(t, `"`, `""`))
		b.WriteByte('"')
	}
	return b.String()
}

// VectorSearch ranks the tenant's embedded chunks by cosine similarity to
// vector: the scan covers the tenant's vectors only.
func (s *Store) VectorSearch(ctx context.Context, tenantID string, vector []float32, limit int) ([]knowledge.Hit, error) {
	if len(vector) == 0 || limit <= 0 {
		return nil, nil
	}
	tenantID = cmp.Or(tenantID, knowledge.DefaultTenant)
	limit = min(limit, maxLimit)
	if err := s.syncVectors(ctx); err != nil {
		return nil, fmt.Errorf("knowledge: vector search: %w", err)
	}
	found := s.vectors.Search(tenantID, vectorindex.Normalize(vector), limit)
	if len(found) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(found)+1)
	for _, f := range found {
		args = append(args, f.Seq)
	}
	args = append(args, tenantID)
	// The tenant again: a seq freed by a delete since the scan may already
	// belong to another tenant's new chunk. CROSS JOIN keeps the chunks
	// the outer loop, read by seq; the planner would otherwise walk all
	// of the tenant's documents.
	rows, err := s.reader.QueryContext(ctx, `
		SELECT c.seq, c.id, c.document_id, d.title, c.heading, c.page, c.content, c.idx
		FROM knowledge_chunks c CROSS JOIN knowledge_documents d ON d.id = c.document_id
		WHERE c.seq IN (?`+strings.Repeat(",?", len(found)-1)+`) AND d.tenant_id = ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("knowledge: vector search: %w", err)
	}
	defer rows.Close()
	bySeq := make(map[int64]knowledge.Hit, len(found))
	for rows.Next() {
		var seq int64
		var h knowledge.Hit
		if err := rows.Scan(&seq, &h.ChunkID, &h.DocumentID, &h.Title, &h.Heading, &h.Page, &h.Content, &h.ChunkIndex); err != nil {
			return nil, fmt.Errorf("knowledge: vector search: %w", err)
		}
		bySeq[seq] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("knowledge: vector search: %w", err)
	}
	hits := make([]knowledge.Hit, 0, len(found))
	for _, f := range found {
		if h, ok := bySeq[f.Seq]; ok { // gone if deleted since the scan
			h.Score = f.Score
			hits = append(hits, h)
		}
	}
	return hits, nil
}

// anys converts strings to query arguments.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
