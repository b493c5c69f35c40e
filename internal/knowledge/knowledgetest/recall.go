package knowledgetest

import (
	"context"
	"fmt"

	"github.com/chatpipe/chatpipe/internal/retrieval"
)

// LabelledQuery is a question and the document that answers it, named by
// its title or its ID.
type LabelledQuery struct {
	Query string
	Want  string
}

// RecallResult is the outcome of Recall.
type RecallResult struct {
	Recall float64  // share of queries whose document is among the first k hits
	Misses []string // the queries that missed, with the documents found instead
}

// Recall runs every query through kb with the settings of base (its Query
// replaced) and measures recall@k: a query counts when one of its first k
// hits belongs to the wanted document. To compare methods, vary base's
// weights: KeywordWeight -1 is vector search alone, VectorWeight -1
// keyword search alone (see knowledge.Service.Search).
func Recall(ctx context.Context, kb retrieval.Knowledge, base retrieval.SearchRequest, queries []LabelledQuery, k int) (RecallResult, error) {
	var res RecallResult
	if len(queries) == 0 {
		return res, nil
	}
	found := 0
	for _, q := range queries {
		req := base
		req.Query = q.Query
		resp, err := kb.Search(ctx, req)
		if err != nil {
			return res, fmt.Errorf("search %q: %w", q.Query, err)
		}
		hit := false
		var got []string
		for i, h := range resp.Hits {
			if i == k {
				break
			}
			got = append(got, h.Title)
			if h.Title == q.Want || h.DocumentID == q.Want {
				hit = true
			}
		}
		if hit {
			found++
		} else {
			res.Misses = append(res.Misses, fmt.Sprintf("%q: want %q, got %q", q.Query, q.Want, got))
		}
	}
	res.Recall = float64(found) / float64(len(queries))
	return res, nil
}
