package plugins

import (
	"context"
	"fmt"

	"github.com/chatpipe/chatpipe/internal/inspect"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("search", newSearch) }

// SearchConfig is the `plugins.search` section: per-mode overrides of
// knowledge.search. Zero values take the knowledge base's settings.
type SearchConfig struct {
	TopK          int     `mapstructure:"top_k"`          // candidates to retrieve
	KeywordWeight float64 `mapstructure:"keyword_weight"` // weight of the keyword ranking in the fusion
	VectorWeight  float64 `mapstructure:"vector_weight"`  // weight of the vector ranking in the fusion
	RRFK          int     `mapstructure:"rrf_k"`          // k of reciprocal rank fusion
}

// maxSearchTopK bounds top_k: rerank and merge read every candidate.
const maxSearchTopK = 200

// Search retrieves candidate passages for the (rewritten) question from
// the knowledge base into ChatManage.SearchResults. A failing knowledge
// base degrades to no candidates, which merge answers with its fallback;
// a part that failed inside the search (the embedding endpoint) is named
// in the stage detail.
type Search struct{ cfg SearchConfig }

func newSearch(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	var cfg SearchConfig
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	switch {
	case cfg.TopK < 0 || cfg.TopK > maxSearchTopK:
		return nil, fmt.Errorf("%s.top_k: must be between 0 and %d", c.Key, maxSearchTopK)
	case cfg.KeywordWeight < 0 || cfg.VectorWeight < 0:
		return nil, fmt.Errorf("%s: keyword_weight and vector_weight must not be negative", c.Key)
	case cfg.RRFK < 0:
		return nil, fmt.Errorf("%s.rrf_k: must not be negative", c.Key)
	}
	return &Search{cfg: cfg}, nil
}

// Name implements pipeline.Plugin.
func (p *Search) Name() string { return "search" }

// Events implements pipeline.Plugin.
func (p *Search) Events() []pipeline.EventType { return []pipeline.EventType{pipeline.StageSearch} }

// OnEvent implements pipeline.Plugin.
func (p *Search) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	if cm.Knowledge == nil {
		cm.SkipStage("no knowledge base configured")
		return next()
	}
	resp, err := cm.Knowledge.Search(ctx, retrieval.SearchRequest{
		TenantID:      cm.TenantID,
		Query:         cm.SearchQuery(),
		TopK:          p.cfg.TopK,
		KeywordWeight: p.cfg.KeywordWeight,
		VectorWeight:  p.cfg.VectorWeight,
		RRFK:          p.cfg.RRFK,
	})
	if err != nil {
		if perr := pipeline.Canceled(ctx); perr != nil {
			return perr
		}
		cm.SearchResults = nil
		cm.StageDetail("knowledge base search failed; continuing without passages")
		return next()
	}
	cm.SearchResults = resp.Hits
	cm.Inspect.Searched(inspect.Search{Query: cm.SearchQuery(), Method: resp.Method, Degraded: resp.Degraded,
		Candidates: inspectCandidates(resp.Hits)})
	detail := count(len(resp.Hits), "candidate")
	if resp.Method != "" {
		detail += " (" + resp.Method + ")"
	}
	if resp.Degraded != "" {
		detail += "; " + resp.Degraded
	}
	cm.StageDetail(detail)
	return next()
}

var _ pipeline.Plugin = (*Search)(nil)
