package knowledge

import "context"

// KeywordQuery is one keyword ranking of a search: a question (Query, as
// Store.KeywordSearch takes it) or terms already made (Terms, as
// Store.KeywordSearchTerms takes them), the latter matched in the title
// field alone when TitleOnly (TitleSearcher). With both set, Terms are
// searched; a TitleOnly query with a store that is no TitleSearcher finds
// nothing.
type KeywordQuery struct {
	Query     string
	Terms     []string
	TitleOnly bool
}

// SnapshotSearcher is implemented by stores that can run a search's
// keyword rankings together, in one read of the index: they see one
// state of the knowledge base (no document added or deleted between
// them), and a store that caches what it read pays for it once. The
// service uses it when the store has it, and one call per ranking
// otherwise.
type SnapshotSearcher interface {
	// KeywordSearches returns each query's ranking of the tenants'
	// chunks, in order, as the one-query methods would.
	KeywordSearches(ctx context.Context, tenantIDs []string, queries []KeywordQuery, limit int) ([][]Hit, error)
}

// keywordSearches runs queries through the store: in one call when it is
// a SnapshotSearcher, else one call each.
func (s *Service) keywordSearches(ctx context.Context, tenants []string, queries []KeywordQuery, limit int) ([][]Hit, error) {
	if ss, ok := s.store.(SnapshotSearcher); ok {
		return ss.KeywordSearches(ctx, tenants, queries, limit)
	}
	out := make([][]Hit, len(queries))
	for i, q := range queries {
		var err error
		switch ts, ok := s.store.(TitleSearcher); {
		case q.TitleOnly && ok:
			out[i], err = ts.KeywordSearchTitleTerms(ctx, tenants, q.Terms, limit)
		case q.TitleOnly:
			// a store without a title search has no lead score
		case q.Terms != nil:
			out[i], err = s.store.KeywordSearchTerms(ctx, tenants, q.Terms, limit)
		default:
			out[i], err = s.store.KeywordSearch(ctx, tenants, q.Query, limit)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
