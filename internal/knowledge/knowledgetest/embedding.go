package knowledgetest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/cloudwego/eino/components/embedding"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

var _ embedding.Embedder = HashEmbedder{}

// HashEmbedder is a deterministic in-process embedder: a text's vector is
// its bag of knowledge.Terms hashed into Dims buckets (each term adds ±1
// to one bucket, the sign hashed too), so texts sharing terms are similar
// and unrelated texts are nearly orthogonal. Synonyms maps a term to the
// term it is counted as, to give vector search something keyword search
// cannot find.
type HashEmbedder struct {
	Dims     int
	Synonyms map[string]string
}

// EmbedStrings implements embedding.Embedder.
func (h HashEmbedder) EmbedStrings(_ context.Context, texts []string, _ ...embedding.Option) ([][]float64, error) {
	out := make([][]float64, len(texts))
	for i, t := range texts {
		out[i] = h.Vector(t)
	}
	return out, nil
}

// Vector is the embedding of text, unit length (all zeros when text has
// no terms).
func (h HashEmbedder) Vector(text string) []float64 {
	dims := max(h.Dims, 1)
	v := make([]float64, dims)
	// Synonyms are given as words; terms are stemmed, so compare terms.
	synonyms := make(map[string]string, len(h.Synonyms))
	for from, to := range h.Synonyms {
		synonyms[strings.Join(knowledge.Terms(from), " ")] = strings.Join(knowledge.Terms(to), " ")
	}
	for _, term := range knowledge.Terms(text) {
		if s, ok := synonyms[term]; ok {
			term = s
		}
		f := fnv.New64a()
		f.Write([]byte(term))
		sum := f.Sum64()
		if sum>>63 == 1 {
			v[sum%uint64(dims)]--
		} else {
			v[sum%uint64(dims)]++
		}
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	if norm > 0 {
		norm = math.Sqrt(norm)
		for i := range v {
			v[i] /= norm
		}
	}
	return v
}

// EmbeddingServer is a fake OpenAI-compatible embeddings endpoint
// (POST /v1/embeddings) answering with a HashEmbedder's vectors; it can be
// told to fail. Its methods are safe for concurrent use.
type EmbeddingServer struct {
	srv      *httptest.Server
	embedder HashEmbedder

	mu         sync.Mutex
	failStatus int
	failures   int // requests still to fail; negative: all
	requests   []EmbeddingRequest
	hold       <-chan struct{} // requests wait until it is closed; nil: none
}

// EmbeddingRequest is one request the server received.
type EmbeddingRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     int      `json:"dimensions"`
	EncodingFormat string   `json:"encoding_format"`
	Authorization  string   `json:"-"`
}

// NewEmbeddingServer starts a server embedding with e; it closes when the
// test ends.
func NewEmbeddingServer(t testing.TB, e HashEmbedder) *EmbeddingServer {
	s := &EmbeddingServer{embedder: e}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// BaseURL is the API root to configure as knowledge.embedding.base_url.
func (s *EmbeddingServer) BaseURL() string { return s.srv.URL + "/v1" }

// Fail makes the next n requests (every request when n < 0; none when
// n == 0) answer with HTTP status.
func (s *EmbeddingServer) Fail(status, n int) {
	s.mu.Lock()
	s.failStatus, s.failures = status, n
	s.mu.Unlock()
}

// Hold makes later requests of more than one text (a document's batches,
// not a search's query) wait until gate is closed or the client gives
// up: an ingest then stays in its embedding step for as long as a test
// needs, while searches still embed their queries.
func (s *EmbeddingServer) Hold(gate <-chan struct{}) {
	s.mu.Lock()
	s.hold = gate
	s.mu.Unlock()
}

// Requests returns the requests received so far.
func (s *EmbeddingServer) Requests() []EmbeddingRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]EmbeddingRequest(nil), s.requests...)
}

func (s *EmbeddingServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.NotFound(w, r)
		return
	}
	var req EmbeddingRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	req.Authorization = r.Header.Get("Authorization")
	s.mu.Lock()
	s.requests = append(s.requests, req)
	status := 0
	if s.failures != 0 {
		status = s.failStatus
		if s.failures > 0 {
			s.failures--
		}
	}
	hold := s.hold
	s.mu.Unlock()
	if hold != nil && len(req.Input) > 1 {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if status != 0 {
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"injected failure %d","type":"server_error"}}`, status)
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	resp := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
	}{Object: "list", Model: req.Model}
	vecs, _ := s.embedder.EmbedStrings(r.Context(), req.Input)
	// Answer in reverse order: clients must place vectors by index.
	for i := len(vecs) - 1; i >= 0; i-- {
		resp.Data = append(resp.Data, item{Object: "embedding", Index: i, Embedding: vecs[i]})
	}
	_ = json.NewEncoder(w).Encode(resp)
}
