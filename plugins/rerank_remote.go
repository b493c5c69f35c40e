package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/pipeline"
)

// rerankHTTP sends remote rerank requests. It is shared by every
// configuration snapshot so that connections are reused across reloads;
// each call is bounded by the plugin's timeout through its context.
var rerankHTTP = &http.Client{}

// maxRerankResponse bounds the response body read from a reranker.
const maxRerankResponse = 4 << 20

// remoteScorer calls a Jina/Cohere/BGE-style rerank API:
//
//	POST {base_url}/rerank {"model","query","documents":[…],"top_n"}
//	→ {"results":[{"index":0,"relevance_score":0.93},…]}
//
// relevance_score is used as is when it lies in 0..1 (Jina, Cohere, and
// BGE served with normalisation); raw logits (any score outside 0..1) go
// through a sigmoid so the threshold keeps its meaning.
type remoteScorer struct {
	endpoint string
	host     string // for messages; never carries credentials
	model    string
	apiKey   string
	topN     int
	timeout  time.Duration
}

func newRemoteScorer(cfg RerankConfig) (*remoteScorer, error) {
	base := strings.TrimRight(strings.TrimSpace(cfg.RemoteBaseURL), "/")
	if base == "" {
		return nil, errors.New("remote_base_url: required for reranker remote (e.g. https://api.jina.ai/v1)")
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("remote_base_url: want an http or https URL such as https://api.jina.ai/v1")
	}
	if u.User != nil || u.RawQuery != "" {
		return nil, errors.New("remote_base_url: put credentials in remote_api_key, not in the URL")
	}
	if !strings.HasSuffix(base, "/rerank") {
		base += "/rerank"
	}
	return &remoteScorer{endpoint: base, host: u.Host, model: cfg.RemoteModel, apiKey: cfg.RemoteAPIKey,
		topN: cfg.TopK, timeout: cfg.Timeout}, nil
}

type rerankRequest struct {
	Model     string   `json:"model,omitempty"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	TopN      int      `json:"top_n"`
}

type rerankResult struct {
	Index          *int     `json:"index"`
	RelevanceScore *float64 `json:"relevance_score"`
	Score          *float64 `json:"score"` // some servers name it so
}

type rerankResponse struct {
	Results []rerankResult `json:"results"`
	Data    []rerankResult `json:"data"` // OpenAI-style proxies
}

func (r *remoteScorer) score(ctx context.Context, cm *pipeline.ChatManage, hits []retrieval.SearchHit) ([]float64, error) {
	docs := make([]string, len(hits))
	for i, h := range hits {
		docs[i] = documentText(h)
	}
	body, err := json.Marshal(rerankRequest{Model: r.model, Query: cm.SearchQuery(), Documents: docs,
		TopN: min(r.topN, len(hits))})
	if err != nil {
		return nil, fmt.Errorf("remote reranker: encoding the request failed")
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("remote reranker at %s: bad request", r.host)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if r.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.apiKey)
	}
	resp, err := rerankHTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("remote reranker at %s did not answer within %s", r.host, r.timeout)
		}
		return nil, fmt.Errorf("remote reranker at %s is unreachable", r.host)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxRerankResponse))
	if err != nil {
		return nil, fmt.Errorf("remote reranker at %s: reading the response failed", r.host)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("remote reranker at %s returned HTTP %d", r.host, resp.StatusCode)
	}
	scores, ok := parseRerankResponse(data, len(hits))
	if !ok {
		return nil, fmt.Errorf("remote reranker at %s returned no usable scores", r.host)
	}
	return scores, nil
}

// parseRerankResponse reads results[{index, relevance_score}] (or data[…],
// or score) into one score per document, -1 for documents not returned.
// Out-of-range and repeated indices are ignored.
func parseRerankResponse(data []byte, n int) ([]float64, bool) {
	var resp rerankResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, false
	}
	results := resp.Results
	if len(results) == 0 {
		results = resp.Data
	}
	scores := make([]float64, n)
	seen := make([]bool, n)
	got, raw := 0, false
	for _, res := range results {
		s := res.RelevanceScore
		if s == nil {
			s = res.Score
		}
		if res.Index == nil || s == nil || *res.Index < 0 || *res.Index >= n || seen[*res.Index] ||
			math.IsNaN(*s) || math.IsInf(*s, 0) {
			continue
		}
		scores[*res.Index], seen[*res.Index] = *s, true
		raw = raw || *s < 0 || *s > 1
		got++
	}
	if got == 0 {
		return nil, false
	}
	for i := range scores {
		switch {
		case !seen[i]:
			scores[i] = -1
		case raw:
			scores[i] = 1 / (1 + math.Exp(-scores[i]))
		}
	}
	return scores, true
}
