package plugins

import (
	"go.uber.org/zap"

	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chatpipe/chatpipe/internal/citation"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/internal/terms"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("rerank", newRerank) }

// RerankConfig is the `plugins.rerank` section.
type RerankConfig struct {
	// Reranker grades the candidates: none (fused order, cut to top_k),
	// score (the fused scores in the search's order, thresholded, with MMR
	// diversity when lambda < 1), remote (a /rerank HTTP API) or llm (the
	// chat model grades them).
	Reranker  string        `mapstructure:"reranker"`
	TopK      int           `mapstructure:"top_k"`     // candidates handed to merge
	Threshold float64       `mapstructure:"threshold"` // minimum normalised score (0..1) to keep
	MinKeep   int           `mapstructure:"min_keep"`  // best candidates kept when none reaches the threshold
	Lambda    float64       `mapstructure:"lambda"`    // score: the search's order vs diversity (MMR), 1 = the search's order
	Timeout   time.Duration `mapstructure:"timeout"`   // remote and llm: bound of the call

	RemoteBaseURL string `mapstructure:"remote_base_url"` // remote: API root, e.g. https://api.jina.ai/v1
	RemoteModel   string `mapstructure:"remote_model"`    // remote: reranker model id
	RemoteAPIKey  string `mapstructure:"remote_api_key"`  // remote: sent as a Bearer token
	LLMModel      string `mapstructure:"llm_model"`       // llm: a name under models:
}

// Rerank keeps the best top_k of the search candidates: in the search's
// order for the score reranker (optionally diversified), in the order of
// their grades for remote and llm. Every reranker yields scores
// normalised to 0..1, so threshold
// means "relevant enough" whichever runs; when no candidate reaches it
// the best min_keep are kept rather than none. A remote or llm reranker
// that fails keeps the fused order; the stage detail says so.
type Rerank struct {
	cfg    RerankConfig
	scorer scorer // nil for none
}

// scorer grades candidates: one score in 0..1 per hit, aligned with hits,
// or a negative score for a hit it did not grade (which is then dropped).
// Errors are written for the stage detail: no secrets, no URLs.
type scorer interface {
	score(ctx context.Context, cm *pipeline.ChatManage, hits []retrieval.SearchHit) ([]float64, error)
}

// llmRerank is the rerank plugin with reranker llm: it also names its model,
// so a missing one is caught when the config loads.
type llmRerank struct{ *Rerank }

// ModelName is the model entry the llm reranker asks.
func (p llmRerank) ModelName() string { return p.cfg.LLMModel }

func newRerank(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := RerankConfig{Reranker: "score", TopK: 6, Threshold: 0.2, MinKeep: 2, Lambda: 1,
		Timeout: 10 * time.Second, LLMModel: "default"}
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	cfg.Reranker = strings.ToLower(strings.TrimSpace(cfg.Reranker))
	switch {
	case cfg.TopK < 1:
		return nil, fmt.Errorf("%s.top_k: must be at least 1", c.Key)
	case cfg.Threshold < 0 || cfg.Threshold > 1:
		return nil, fmt.Errorf("%s.threshold: must be between 0 and 1 (scores are normalised)", c.Key)
	case cfg.MinKeep < 0 || cfg.MinKeep > cfg.TopK:
		return nil, fmt.Errorf("%s.min_keep: must be between 0 and top_k (%d)", c.Key, cfg.TopK)
	case cfg.Lambda < 0 || cfg.Lambda > 1:
		return nil, fmt.Errorf("%s.lambda: must be between 0 and 1", c.Key)
	case cfg.Timeout <= 0:
		return nil, fmt.Errorf("%s.timeout: must be positive", c.Key)
	}
	p := &Rerank{cfg: cfg}
	switch cfg.Reranker {
	case "none":
	case "score":
		p.scorer = fusedScorer{}
	case "remote":
		r, err := newRemoteScorer(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s.%w", c.Key, err)
		}
		p.scorer = r
	case "llm":
		if strings.TrimSpace(cfg.LLMModel) == "" {
			return nil, fmt.Errorf("%s.llm_model: required for reranker llm", c.Key)
		}
		p.scorer = &llmScorer{model: cfg.LLMModel, timeout: cfg.Timeout}
		return llmRerank{p}, nil
	default:
		return nil, fmt.Errorf("%s.reranker: unknown reranker %q (want none, score, remote or llm)", c.Key, cfg.Reranker)
	}
	return p, nil
}

// Name implements pipeline.Plugin.
func (p *Rerank) Name() string { return "rerank" }

// Events implements pipeline.Plugin.
func (p *Rerank) Events() []pipeline.EventType { return []pipeline.EventType{pipeline.StageRerank} }

// OnEvent implements pipeline.Plugin.
func (p *Rerank) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	hits := cm.SearchResults
	if len(hits) == 0 {
		cm.SkipStage("no candidates")
		return next()
	}
	next = keptThen(cm, next)
	if p.scorer == nil {
		cm.SearchResults = hits[:min(p.cfg.TopK, len(hits))]
		cm.StageDetail(fmt.Sprintf("none: kept the fused top %d of %d", len(cm.SearchResults), len(hits)))
		return next()
	}
	scores, err := p.scorer.score(ctx, cm, hits)
	if err != nil {
		if perr := pipeline.Canceled(ctx); perr != nil {
			return perr
		}
		cm.SearchResults = hits[:min(p.cfg.TopK, len(hits))]
		cm.Log().Warn("rerank failed; keeping the fused order", zap.String("reranker", p.cfg.Reranker), zap.Error(err))
		cm.StageDetail(fmt.Sprintf("%v; kept the fused order (top %d of %d)", err, len(cm.SearchResults), len(hits)))
		return next()
	}
	kept, note := p.selectHits(hits, scores)
	cm.SearchResults = kept
	detail := fmt.Sprintf("%s: kept %d of %d (threshold %.2f", p.cfg.Reranker, len(kept), len(hits), p.cfg.Threshold)
	if p.cfg.Reranker == "score" && p.cfg.Lambda < 1 {
		detail += fmt.Sprintf(", diversity lambda %.2f", p.cfg.Lambda)
	}
	detail += ")"
	if note != "" {
		detail += "; " + note
	}
	cm.StageDetail(detail)
	return next()
}

// keptThen is next, after telling the turn inspector what rerank kept.
func keptThen(cm *pipeline.ChatManage, next func() *pipeline.PluginError) func() *pipeline.PluginError {
	return func() *pipeline.PluginError {
		cm.Inspect.Reranked(inspectKept(cm.SearchResults))
		return next()
	}
}

// selectHits applies the threshold (falling back to the best min_keep),
// orders the candidates and keeps top_k, each hit carrying its normalised
// score. A remote or llm grade reorders the candidates; the score
// reranker keeps the search's order (with MMR diversity when lambda < 1).
// That order is not always the score order: the search moves the best
// chunk of each of its first documents ahead of the first documents'
// other chunks, and sorting by score would undo it, putting a document's
// second chunk back ahead of the second-best document.
func (p *Rerank) selectHits(hits []retrieval.SearchHit, scores []float64) ([]retrieval.SearchHit, string) {
	graded := make([]int, 0, len(hits))
	for i, s := range scores {
		if s >= 0 {
			graded = append(graded, i)
		}
	}
	byScore := slices.Clone(graded)
	slices.SortStableFunc(byScore, func(a, b int) int { return cmpDesc(scores[a], scores[b]) })
	if p.cfg.Reranker != "score" {
		graded = byScore
	}
	passing := slices.DeleteFunc(slices.Clone(graded), func(i int) bool { return scores[i] < p.cfg.Threshold })
	note := ""
	if len(passing) == 0 {
		passing = byScore[:min(p.cfg.MinKeep, len(byScore))]
		note = fmt.Sprintf("no candidate reached the threshold; kept the best %d", len(passing))
	}
	order := passing[:min(p.cfg.TopK, len(passing))]
	if p.cfg.Reranker == "score" && p.cfg.Lambda < 1 {
		// MMR's relevance follows the search's order: a candidate is at
		// least as relevant as any after it (a document the search moved
		// up is lifted to the best score behind it, and the tail keeps its
		// differences).
		rel := slices.Clone(scores)
		for k := len(passing) - 2; k >= 0; k-- {
			rel[passing[k]] = max(rel[passing[k]], rel[passing[k+1]])
		}
		order = mmr(hits, rel, passing, p.cfg.TopK, p.cfg.Lambda)
	}
	out := make([]retrieval.SearchHit, len(order))
	for i, idx := range order {
		out[i] = hits[idx]
		out[i].Score = scores[idx]
	}
	return out, note
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// mmr picks up to k of the candidates (indices into hits, best first) by
// maximal marginal relevance: each pick maximises
// lambda·relevance − (1−lambda)·(highest similarity to a pick so far),
// similarity being the Jaccard overlap of the passages' terms. Ties go to
// the better-ranked candidate, so the result is deterministic.
func mmr(hits []retrieval.SearchHit, rel []float64, cands []int, k int, lambda float64) []int {
	sets := make(map[int]terms.Set, len(cands))
	for _, i := range cands {
		sets[i] = terms.NewSet(hits[i].Content)
	}
	maxSim := make(map[int]float64, len(cands))
	left := slices.Clone(cands)
	var picked []int
	for len(picked) < k && len(left) > 0 {
		best, bestVal := 0, 0.0
		for j, i := range left {
			v := lambda*rel[i] - (1-lambda)*maxSim[i]
			if j == 0 || v > bestVal {
				best, bestVal = j, v
			}
		}
		p := left[best]
		picked = append(picked, p)
		left = slices.Delete(left, best, best+1)
		for _, i := range left {
			maxSim[i] = max(maxSim[i], terms.Jaccard(sets[i], sets[p]))
		}
	}
	return picked
}

// fusedScorer is the score reranker: the search's fused scores relative to
// the best candidate (the best scores 1). Fused (reciprocal rank) scores
// have no absolute scale, so a threshold on them means "at least this
// share of the best candidate's score".
type fusedScorer struct{}

func (fusedScorer) score(_ context.Context, _ *pipeline.ChatManage, hits []retrieval.SearchHit) ([]float64, error) {
	top := 0.0
	for _, h := range hits {
		top = max(top, h.Score)
	}
	out := make([]float64, len(hits))
	for i, h := range hits {
		if top <= 0 {
			out[i] = 1 // no scores at all: keep the order, drop nothing
			continue
		}
		out[i] = max(h.Score, 0) / top
	}
	return out, nil
}

// documentText is what a remote reranker reads of a hit: its label line
// (as in the numbered context) and its content.
func documentText(h retrieval.SearchHit) string {
	return citation.Label(citation.Passage{Title: h.Title, Heading: h.Heading}) + "\n" + h.Content
}

var (
	_ pipeline.Plugin = (*Rerank)(nil)
	_ pipeline.Plugin = llmRerank{}
	_ scorer          = fusedScorer{}
	_ scorer          = (*remoteScorer)(nil)
	_ scorer          = (*llmScorer)(nil)
)
