// Package retrieval is the contract between the knowledge base and its
// readers: the search request and its ranked hits, and whole documents.
// internal/knowledge implements it; the search plugins, agent tools, the
// MCP server, the HTTP search route and the evaluations read it. It is a
// leaf (standard library only), so none of them imports another's code to
// share these types.
package retrieval

import "context"

// Knowledge searches the knowledge base: keyword (and vector, when
// embeddings are configured) retrieval fused into one ranking.
type Knowledge interface {
	Search(ctx context.Context, req SearchRequest) (SearchResponse, error)
	// Version changes whenever a document is added or deleted and never
	// repeats; compare it for equality only. Caches of answers key on it,
	// so a document change invalidates them.
	Version(ctx context.Context) (int64, error)
}

// SearchRequest asks the knowledge base for candidates. Zero fields take
// the knowledge base's configured defaults.
type SearchRequest struct {
	TenantID      string // whose documents to search ("" = the default tenant)
	Query         string
	TopK          int     // candidates to return
	KeywordWeight float64 // weight of the keyword ranking in the fusion
	VectorWeight  float64 // weight of the vector ranking in the fusion
	RRFK          int     // k of reciprocal rank fusion: 1/(k+rank)
}

// SearchResponse is the fused candidate list, best first.
type SearchResponse struct {
	Hits []SearchHit
	// Method says what ran: "hybrid", "keyword" or "vector".
	Method string
	// Degraded explains, for people, a part that failed and was left out
	// (e.g. "embedding endpoint unreachable; keyword search only").
	Degraded string
}

// SearchHit is one candidate passage.
type SearchHit struct {
	ChunkID      string
	DocumentID   string
	Title        string // the document's title
	Heading      string // the section heading the chunk sits under, if any
	Page         int    // the chunk's page (PDF) or slide (PPTX), 0 when the source has no pages
	Content      string
	ChunkIndex   int     // position of the chunk in its document
	Score        float64 // the fused score (higher is better); rerankers may replace it
	KeywordScore float64 // bm25-derived, 0 when not found by keyword
	VectorScore  float64 // cosine similarity, 0 when not found by vector
	KeywordRank  int     // 1-based, 0 when absent
	VectorRank   int     // 1-based, 0 when absent
}
