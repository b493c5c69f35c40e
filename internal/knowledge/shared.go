package knowledge

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
)

// ErrForbidden: the caller may not change the document (a shared one,
// without the right to manage shared documents).
var ErrForbidden = errors.New("not allowed")

// Shared documents belong to SharedTenant. Every tenant's listing, search
// and reads take them in besides its own, here in the service: the stores
// know tenants only. A keyword search asks the store once for both
// tenants; a vector search asks once per tenant and merges by score
// (cosine scores do not depend on the tenant filter, so the two lists
// compare). The shared tenant is left out while there are no shared
// documents.

// sharedState caches whether shared documents exist, per store version.
type sharedState struct {
	version int64
	exists  bool
}

// Shared reports whether doc is a shared document.
func (d Document) Shared() bool { return d.TenantID == SharedTenant }

// visibleTo reports whether tenantID may read doc: its own or shared.
func visibleTo(doc Document, tenantID string) bool {
	return doc.TenantID == cmp.Or(tenantID, DefaultTenant) || doc.Shared()
}

// hasShared reports whether the knowledge base holds shared documents,
// asking the store only when its version moved.
func (s *Service) hasShared(ctx context.Context) (bool, error) {
	v, err := s.store.Version(ctx)
	if err != nil {
		return false, err
	}
	if st := s.shared.Load(); st != nil && st.version == v {
		return st.exists, nil
	}
	_, total, err := s.store.Documents(ctx, SharedTenant, 1, 0)
	if err != nil {
		return false, err
	}
	s.shared.Store(&sharedState{version: v, exists: total > 0})
	return total > 0, nil
}

// searchTenants are the tenants whose chunks tenantID's search covers.
func (s *Service) searchTenants(ctx context.Context, tenantID string) ([]string, error) {
	tenantID = cmp.Or(tenantID, DefaultTenant)
	if tenantID == SharedTenant {
		return []string{tenantID}, nil
	}
	has, err := s.hasShared(ctx)
	if err != nil || !has {
		return []string{tenantID}, err
	}
	return []string{tenantID, SharedTenant}, nil
}

// keywordSearch is the store's keyword search over tenantID's and the
// shared chunks, best limit first: one ranking for both, and one more
// each for the query's English bridge (BridgeTerms) and its expansion
// (ExpansionTerms) when it has them, and for its English terms in the
// title field when Search.LeadWeight is set and the store is a
// TitleSearcher, and for the words that Search.Synonyms relates to the
// query's when Search.SynonymWeight is set, and for the names in a
// Chinese question (nameTerms) in the title field when Search.NameWeight
// is set and the store is a TitleSearcher, each added to a chunk's score
// with its weight. The rankings are run together (keywordSearches).
func (s *Service) keywordSearch(ctx context.Context, tenantID, query string, limit int) ([]Hit, error) {
	search := s.options().Search // read once: a reload may change it
	tenants, err := s.searchTenants(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	bridge, related := queryExpansions(query)
	queries := []KeywordQuery{{Query: query}}
	// add[i] adds the ranking of queries[i+1] to the hits.
	var add []func(hits, found []Hit) []Hit
	// rank adds a ranking of terms (in the title field alone when
	// titleOnly), whose hits keep lets through (all when nil) add their
	// score × weight to a chunk's.
	rank := func(terms []string, titleOnly bool, weight func(Hit) float64, keep func([]Hit) []Hit) {
		if len(terms) == 0 {
			return
		}
		queries = append(queries, KeywordQuery{Terms: terms, TitleOnly: titleOnly})
		// Not cut to limit yet: a chunk the bridge would push out may
		// come back through the expansion.
		add = append(add, func(hits, found []Hit) []Hit {
			if keep != nil {
				found = keep(found)
			}
			return addExpansion(hits, found, weight, len(hits)+len(found))
		})
	}
	constant := func(w float64) func(Hit) float64 { return func(Hit) float64 { return w } }
	rank(bridge, false, bridgeWeight, nil)
	rank(related, false, constant(expansionWeight), nil)
	if search.SynonymWeight > 0 {
		rank(search.Synonyms.terms(query, QueryTerms(query)), false, constant(search.SynonymWeight), nil)
	}
	if _, ok := s.store.(TitleSearcher); ok {
		if search.LeadWeight > 0 {
			rank(leadEnglishTerms(query, bridge), true, constant(search.LeadWeight), withoutChinese)
		}
		if search.NameWeight > 0 {
			rank(nameTerms(query), true, constant(search.NameWeight), nil)
		}
	}
	found, err := s.keywordSearches(ctx, tenants, queries, limit)
	if err != nil {
		return nil, err
	}
	hits := found[0]
	for i, a := range add {
		hits = a(hits, found[i+1])
	}
	return hits[:min(limit, len(hits))], nil
}

// storeVectorSearch is the store's vector search over tenantID's and the
// shared chunks, best limit first.
func (s *Service) storeVectorSearch(ctx context.Context, tenantID string, vector []float32, limit int) ([]Hit, error) {
	tenants, err := s.searchTenants(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	var lists [][]Hit
	for _, t := range tenants {
		hits, err := s.store.VectorSearch(ctx, t, vector, limit)
		if err != nil {
			return nil, err
		}
		lists = append(lists, hits)
	}
	return mergeHits(lists, limit), nil
}

// mergeHits merges rankings by score, best first (a tie keeps the earlier
// list's hit first), and keeps limit.
func mergeHits(lists [][]Hit, limit int) []Hit {
	if len(lists) == 1 {
		return lists[0]
	}
	var all []Hit
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.SortStableFunc(all, func(a, b Hit) int { return cmp.Compare(b.Score, a.Score) })
	return all[:min(limit, len(all))]
}

// documentsWithShared lists tenantID's documents and the shared ones
// together, newest first: each list is read up to offset+limit and the
// two merged.
func (s *Service) documentsWithShared(ctx context.Context, tenantID string, limit, offset int) ([]Document, int, error) {
	own, ownTotal, err := s.store.Documents(ctx, tenantID, offset+limit, 0)
	if err != nil {
		return nil, 0, err
	}
	shared, sharedTotal, err := s.store.Documents(ctx, SharedTenant, offset+limit, 0)
	if err != nil {
		return nil, 0, err
	}
	all := append(own, shared...)
	slices.SortStableFunc(all, func(a, b Document) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	})
	if offset >= len(all) {
		return []Document{}, ownTotal + sharedTotal, nil
	}
	return all[offset:min(offset+limit, len(all))], ownTotal + sharedTotal, nil
}

// DeleteSharedDocument removes a shared document; the caller checked that
// the key may manage shared documents. ErrNotFound when id is not a
// shared document.
func (s *Service) DeleteSharedDocument(ctx context.Context, id string) error {
	return s.DeleteDocument(ctx, SharedTenant, id)
}

// TenantList returns tenantIDs with "" read as DefaultTenant, each once,
// in order: the tenants a store's KeywordSearch filters by.
func TenantList(tenantIDs []string) []string {
	out := make([]string, 0, len(tenantIDs))
	for _, t := range tenantIDs {
		if t = cmp.Or(t, DefaultTenant); !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}
