package knowledge

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/internal/telemetry"
)

var _ retrieval.Knowledge = (*Service)(nil)

// Search methods reported in retrieval.SearchResponse.Method.
const (
	MethodHybrid  = "hybrid"
	MethodKeyword = "keyword"
	MethodVector  = "vector"
)

const (
	// maxTopK bounds the candidates one search returns.
	maxTopK = 200
	// overRetrieve is how many candidates each ranking fetches per
	// requested one: fusion can only promote what a ranking returned.
	overRetrieve = 3
	// minFetch is the fewest candidates each ranking fetches.
	minFetch = 30
	// distinctHead is how many of the first candidates come from distinct
	// documents (see diversify).
	distinctHead = 5
	// queryEmbedTimeout bounds embedding the query: search degrades to
	// keyword-only rather than keep a user waiting on a stuck endpoint.
	queryEmbedTimeout = 5 * time.Second
)

// Search retrieves candidates for req.Query from the documents of
// req.TenantID ("" = DefaultTenant) and the shared ones: keyword (bm25) and, when an
// embedder is configured, vector (cosine) rankings, each over-retrieved
// and fused by weighted reciprocal rank, score = Σ weight/(rrf_k + rank).
// Zero request fields take the configured defaults; a negative weight
// leaves that ranking out (KeywordWeight -1 asks for vector search only).
// An empty query finds nothing. When embedding the query or the vector
// search fails, Search degrades to keyword-only and says so in Degraded;
// it returns an error only when no ranking could run (or ctx ended).
func (s *Service) Search(ctx context.Context, req retrieval.SearchRequest) (retrieval.SearchResponse, error) {
	ctx, span := telemetry.Start(ctx, "knowledge.search")
	resp, err := s.search(ctx, req)
	if span.IsRecording() {
		top := 0.0
		if len(resp.Hits) > 0 {
			top = resp.Hits[0].Score
		}
		span.SetAttributes(telemetry.ChatpipeSearchMethod.String(resp.Method),
			telemetry.ChatpipeSearchResults.Int(len(resp.Hits)), telemetry.ChatpipeSearchTopScore.Float64(top))
		if resp.Degraded != "" {
			span.SetAttributes(telemetry.ChatpipeSearchDegraded.String(resp.Degraded))
		}
		telemetry.Fail(span, "search_error", err)
	}
	span.End()
	return resp, err
}

func (s *Service) search(ctx context.Context, req retrieval.SearchRequest) (retrieval.SearchResponse, error) {
	p := s.searchParams(req)
	resp := retrieval.SearchResponse{Hits: []retrieval.SearchHit{}, Method: p.method()}
	query := strings.TrimSpace(req.Query)
	if !p.useKeyword && !p.useVector {
		resp.Degraded = "Vector search was asked for alone, but no embedding model is configured (knowledge.embedding); nothing was searched."
		return resp, nil
	}
	if query == "" {
		return resp, nil
	}
	tenant := cmp.Or(req.TenantID, DefaultTenant)
	fetch := min(max(overRetrieve*p.topK, minFetch), 1000)
	start := time.Now()

	var (
		wg                  sync.WaitGroup
		vectorHits          []Hit
		vectorErr, embedErr error
	)
	if p.useVector {
		wg.Go(func() {
			vectorHits, embedErr, vectorErr = s.vectorSearch(ctx, tenant, query, fetch)
		})
	}
	var keywordHits []Hit
	var keywordErr error
	if p.useKeyword {
		keywordHits, keywordErr = s.keywordSearch(ctx, tenant, query, fetch)
	}
	wg.Wait()

	if err := ctx.Err(); err != nil {
		return resp, context.Cause(ctx)
	}
	vectorOK := p.useVector && embedErr == nil && vectorErr == nil
	keywordOK := p.useKeyword && keywordErr == nil
	var problems []string
	if p.useVector && !vectorOK {
		s.log.Warn("vector search failed; leaving it out", zap.Error(errors.Join(embedErr, vectorErr)))
		if embedErr != nil {
			problems = append(problems, "embedding the query failed ("+describeEmbeddingError(embedErr)+")")
		} else {
			problems = append(problems, "the vector search failed")
		}
	}
	if p.useKeyword && !keywordOK {
		s.log.Error("keyword search failed", zap.Error(keywordErr))
		if !vectorOK {
			return resp, keywordErr
		}
		problems = append(problems, "the keyword search failed")
	}
	switch {
	case keywordOK && vectorOK:
		resp.Method = MethodHybrid
	case keywordOK:
		resp.Method = MethodKeyword
	default:
		resp.Method = MethodVector
	}
	switch {
	case len(problems) > 0 && !keywordOK && !vectorOK:
		resp.Degraded = capitalize(strings.Join(problems, "; ")) + "; nothing was searched."
	case len(problems) > 0:
		resp.Degraded = capitalize(strings.Join(problems, "; ")) + "; " + resp.Method + " search only."
	}

	if !keywordOK {
		keywordHits = nil
	}
	if !vectorOK {
		vectorHits = nil
	}
	resp.Hits = Fuse(keywordHits, vectorHits, p.keywordWeight, p.vectorWeight, p.rrfK, p.topK)
	s.log.Debug("search", zap.String("method", resp.Method), zap.Int("keyword_hits", len(keywordHits)),
		zap.Int("vector_hits", len(vectorHits)), zap.Int("hits", len(resp.Hits)), zap.Duration("elapsed", time.Since(start)))
	return resp, nil
}

// vectorSearch embeds the query and searches the tenant's vectors;
// embedErr is the embedder's failure, searchErr the store's.
func (s *Service) vectorSearch(ctx context.Context, tenantID, query string, limit int) (hits []Hit, embedErr, searchErr error) {
	ectx, cancel := context.WithTimeout(ctx, queryEmbedTimeout)
	defer cancel()
	vecs, err := s.embedBatch(ectx, []string{query}, 0)
	if err != nil {
		return nil, err, nil
	}
	hits, err = s.storeVectorSearch(ctx, tenantID, vecs[0], limit)
	return hits, nil, err
}

// capitalize upper-cases the first letter of an ASCII sentence.
func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// searchParams are a request's settings after defaults.
type searchParams struct {
	topK, rrfK                  int
	keywordWeight, vectorWeight float64
	useKeyword, useVector       bool
}

func (s *Service) searchParams(req retrieval.SearchRequest) searchParams {
	def := s.options().Search
	p := searchParams{
		topK:          cmp.Or(req.TopK, def.TopK, 20),
		rrfK:          cmp.Or(req.RRFK, def.RRFK, 60),
		keywordWeight: cmp.Or(req.KeywordWeight, def.KeywordWeight),
		vectorWeight:  cmp.Or(req.VectorWeight, def.VectorWeight),
	}
	p.topK = min(max(p.topK, 1), maxTopK)
	p.rrfK = max(p.rrfK, 0)
	p.useKeyword = p.keywordWeight > 0
	p.useVector = p.vectorWeight > 0 && s.embedder != nil
	if !p.useKeyword && !p.useVector && req.KeywordWeight >= 0 {
		// Configured for vector search alone, without an embedder:
		// keyword search is all there is.
		p.useKeyword, p.keywordWeight = true, 1
	}
	return p
}

// method is what a search with these settings runs when nothing fails.
func (p searchParams) method() string {
	switch {
	case p.useKeyword && p.useVector:
		return MethodHybrid
	case p.useVector:
		return MethodVector
	}
	return MethodKeyword
}

// Fuse merges a keyword and a vector ranking (each best first) by
// weighted reciprocal rank: a chunk scores Σ weight/(rrfK + rank) over
// the rankings that found it. It returns the best topK, ties broken by
// the better single rank, then by chunk id.
func Fuse(keyword, vector []Hit, keywordWeight, vectorWeight float64, rrfK, topK int) []retrieval.SearchHit {
	byID := make(map[string]*retrieval.SearchHit, len(keyword)+len(vector))
	var order []*retrieval.SearchHit
	entry := func(h Hit) *retrieval.SearchHit {
		if e, ok := byID[h.ChunkID]; ok {
			return e
		}
		e := &retrieval.SearchHit{ChunkID: h.ChunkID, DocumentID: h.DocumentID, Title: h.Title,
			Heading: h.Heading, Page: h.Page, Content: h.Content, ChunkIndex: h.ChunkIndex}
		byID[h.ChunkID] = e
		order = append(order, e)
		return e
	}
	for i, h := range keyword {
		e := entry(h)
		if e.KeywordRank == 0 {
			e.KeywordRank, e.KeywordScore = i+1, h.Score
			e.Score += keywordWeight / float64(rrfK+i+1)
		}
	}
	for i, h := range vector {
		e := entry(h)
		if e.VectorRank == 0 {
			e.VectorRank, e.VectorScore = i+1, h.Score
			e.Score += vectorWeight / float64(rrfK+i+1)
		}
	}
	best := func(h *retrieval.SearchHit) int {
		r := h.KeywordRank
		if r == 0 || (h.VectorRank != 0 && h.VectorRank < r) {
			r = h.VectorRank
		}
		return r
	}
	slices.SortStableFunc(order, func(a, b *retrieval.SearchHit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(best(a), best(b)), strings.Compare(a.ChunkID, b.ChunkID))
	})
	order = diversify(order, distinctHead)
	out := make([]retrieval.SearchHit, 0, min(topK, len(order)))
	for _, e := range order[:min(topK, len(order))] {
		out = append(out, *e)
	}
	return out
}

// diversify moves the best chunk of each of the first head documents to
// the front, in score order, and leaves everything else in score order
// behind them. Without it the first places often go to several chunks
// of one long document, and rerank and merge, which keep only the first
// few, never see the second-best document. A document's rank (that of
// its best chunk) is unchanged.
func diversify(order []*retrieval.SearchHit, head int) []*retrieval.SearchHit {
	seen := make(map[string]bool, head)
	front := make([]*retrieval.SearchHit, 0, len(order))
	var rest []*retrieval.SearchHit
	for _, e := range order {
		if len(seen) < head && !seen[e.DocumentID] {
			seen[e.DocumentID] = true
			front = append(front, e)
			continue
		}
		rest = append(rest, e)
	}
	return append(front, rest...)
}
