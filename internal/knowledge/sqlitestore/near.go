package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/sqlitedb"
)

// A ranking with a proximity bonus is two FTS5 queries: the question's
// terms (bm25 over every chunk holding one of them) and its word pairs
// (bm25 of the NEAR groups, over the chunks holding both words of a
// pair), a chunk's score being the first plus proximityWeight times the
// second. They do not depend on each other, so the pairs are scored on a
// second pooled connection while the terms are ranked on the search's
// own: a search's wall time is then the longer of the two, not their sum
// (the pairs cost ≈2.5 ms of a 20 ms search at 100,000 chunks:
// docs/retrieval.md).
//
// The bonus is added to the terms' best nearWindow(limit) chunks, a
// rescoring window: a chunk beyond it gets none. Every chunk the pairs
// find holds the terms too, so only a chunk whose terms alone rank it
// past the window, yet whose bonus would lift it into the limit, is
// ranked otherwise than the one statement did. At 100,000 chunks
// (knowledgetest.ScaleCorpus, its 400 questions with pairs, 60 hits) a
// window of 2 x limit changed the first 20 hits of 32 questions, 4 x of 9,
// 8 x of none; every evaluation set's numbers are the same with any of
// them (docs/retrieval.md). Exact alternatives cost more than the bonus
// itself: the one statement after the window (the bound on what a chunk
// beyond it may reach let half those questions through), or the terms'
// bm25 of the chunks beyond it (FTS5 answers rowid IN (…) one rowid at
// a time, recounting its statistics each: 12 ms).

// nearWindow is how many of the terms' best chunks the bonus is added to
// for a search of limit hits.
func nearWindow(limit int) int { return min(maxLimit, max(8*limit, 100)) }

// scored is a chunk (its index rowid) and its bm25, lower is better.
type scored struct {
	seq   int64
	score float64
}

// rankNear runs a ranking with a proximity bonus: expr the match
// expression of its terms, near that of its pairs, filter as for rank.
// The terms' best chunks are read in tx; the pairs' scores in a read
// transaction of their own on another connection when one may be taken
// (sqlitedb.DB.PairedReads), else in tx after the terms. The hits are read
// in tx; a chunk added or deleted between the two reads only gains or
// misses a bonus (or, its rowid reused by a chunk added meanwhile, passes
// it on to that chunk).
func (s *Store) rankNear(ctx context.Context, tx *sql.Tx, tenants []string, filter int, expr, near string, limit int) ([]knowledge.Hit, error) {
	limit = min(limit, maxLimit)
	if filter > 0 {
		expr, near = forTenants(expr, tenants), forTenants(near, tenants)
	}
	window := nearWindow(limit)
	var bonus map[int64]float64
	var best []scored
	var err error
	select {
	case s.db.PairedReads <- struct{}{}:
		best, bonus, err = s.rankBeside(ctx, tx, expr, near, window)
	default: // every slot taken, or a store with one connection
		if best, err = bestScores(ctx, tx, expr, window); err == nil {
			bonus, err = nearScores(ctx, tx, near)
		}
	}
	if err != nil {
		return nil, err
	}
	for i := range best {
		best[i].score += proximityWeight * bonus[best[i].seq]
	}
	slices.SortFunc(best, func(a, b scored) int { return cmp.Or(cmp.Compare(a.score, b.score), cmp.Compare(a.seq, b.seq)) })
	best = best[:min(limit, len(best))]
	return readHits(ctx, tx, tenants, filter, best)
}

// rankBeside ranks expr's best window chunks in tx while a goroutine it
// waits for scores near in a transaction of its own, releasing the
// paired-read slot rankNear took.
func (s *Store) rankBeside(ctx context.Context, tx *sql.Tx, expr, near string, window int) ([]scored, map[int64]float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		bonus map[int64]float64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-s.db.PairedReads }()
		bonus, err := s.nearScoresAside(ctx, near)
		done <- result{bonus, err}
	}()
	best, err := bestScores(ctx, tx, expr, window)
	if err != nil {
		cancel()
	}
	r := <-done
	if err != nil {
		return nil, nil, err
	}
	return best, r.bonus, r.err
}

// nearScoresAside is nearScores in a read transaction of its own.
func (s *Store) nearScoresAside(ctx context.Context, near string) (map[int64]float64, error) {
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = sqlitedb.IgnoreDone(tx.Rollback()) }()
	return nearScores(ctx, tx, near)
}

// bestScores is the best window chunks matching expr, by bm25.
func bestScores(ctx context.Context, tx *sql.Tx, expr string, window int) ([]scored, error) {
	rows, err := tx.QueryContext(ctx, `SELECT rowid, `+bm25+` AS score FROM knowledge_fts WHERE knowledge_fts MATCH ? ORDER BY score LIMIT ?`, expr, window)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []scored
	for rows.Next() {
		var c scored
		if err := rows.Scan(&c.seq, &c.score); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// nearScores is the bm25 of every chunk matching near, by rowid.
func nearScores(ctx context.Context, tx *sql.Tx, near string) (map[int64]float64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT rowid, `+bm25+` FROM knowledge_fts WHERE knowledge_fts MATCH ?`, near)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]float64)
	for rows.Next() {
		var seq int64
		var score float64
		if err := rows.Scan(&seq, &score); err != nil {
			return nil, err
		}
		out[seq] = score
	}
	return out, rows.Err()
}

// readHits reads the chunks of best, in its order, with their scores;
// with a filter, only the tenants' (as rankingSQL checks them).
func readHits(ctx context.Context, tx *sql.Tx, tenants []string, filter int, best []scored) ([]knowledge.Hit, error) {
	if len(best) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(best)+filter)
	order := make(map[int64]int, len(best))
	for i, c := range best {
		args = append(args, c.seq)
		order[c.seq] = i
	}
	query := `SELECT c.seq, c.id, c.document_id, d.title, c.heading, c.page, c.content, c.idx
	FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
	WHERE c.seq IN (?` + strings.Repeat(",?", len(best)-1) + `)`
	if filter > 0 {
		query += ` AND c.tenant_id IN (?` + strings.Repeat(",?", filter-1) + `)`
		args = append(args, anys(tenants)...)
	}
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	hits := make([]knowledge.Hit, len(best))
	found := make([]bool, len(best))
	for rows.Next() {
		var seq int64
		var h knowledge.Hit
		if err := rows.Scan(&seq, &h.ChunkID, &h.DocumentID, &h.Title, &h.Heading, &h.Page, &h.Content, &h.ChunkIndex); err != nil {
			return nil, err
		}
		i := order[seq]
		h.Score = -best[i].score // FTS5's bm25 is lower-is-better
		hits[i], found[i] = h, true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := hits[:0]
	for i, h := range hits {
		if found[i] {
			out = append(out, h)
		}
	}
	return out, nil
}
