package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/embedding"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/llm"
)

// embeddingsServer answers every request with status and body, and
// records the last request body.
func embeddingsServer(t *testing.T, status int, header http.Header, body string) (*httptest.Server, *[]byte) {
	t.Helper()
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func newTestEmbedder(t *testing.T, baseURL string) *OpenAIEmbedder {
	t.Helper()
	e, err := NewOpenAIEmbedder(EmbeddingOptions{Provider: "openai", BaseURL: baseURL + "/v1", Model: "emb", APIKey: "sk-secret",
		Dimensions: 3, Timeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEmbedderSendsTheRequestAndOrdersVectorsByIndex(t *testing.T) {
	t.Parallel()
	srv, got := embeddingsServer(t, 200, nil,
		`{"object":"list","data":[{"index":1,"embedding":[0,1,0]},{"index":0,"embedding":[1,0,0]}],"usage":{"prompt_tokens":2}}`)
	e := newTestEmbedder(t, srv.URL)
	vecs, err := e.EmbedStrings(t.Context(), []string{"first", "second"}, embedding.WithModel("other"))
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]float64{{1, 0, 0}, {0, 1, 0}}; !reflect.DeepEqual(vecs, want) {
		t.Errorf("vectors = %v, want %v", vecs, want)
	}
	var req map[string]any
	if err := json.Unmarshal(*got, &req); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"model": "other", "input": []any{"first", "second"}, "dimensions": float64(3), "encoding_format": "float"}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("request = %v, want %v", req, want)
	}
}

func TestEmbedderErrorsAreProviderErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		status    int
		header    http.Header
		body      string
		retryable bool
		describe  string
	}{
		{"unauthorized", 401, nil, `{"error":{"message":"Incorrect API key provided: sk-secre**cret. See https://x.io/?key=1","type":"invalid_request_error"}}`,
			false, "rejected the credentials (check knowledge.embedding.api_key)"},
		{"rate limited", 429, http.Header{"Retry-After": {"7"}}, `{"error":"slow down"}`, true, "is rate-limiting requests"},
		{"server error", 503, nil, `<html>bad gateway</html>`, true, "returned HTTP 503"},
		{"bad request", 400, nil, `{"detail":"input too long"}`, false, "returned HTTP 400"},
		{"not json", 200, nil, `not json`, false, "sent an unusable response"},
		{"missing vector", 200, nil, `{"data":[{"index":0,"embedding":[1]}]}`, false, "sent an unusable response"},
		{"index out of range", 200, nil, `{"data":[{"index":5,"embedding":[1]},{"index":0,"embedding":[1]}]}`, false, "sent an unusable response"},
	} {
		srv, _ := embeddingsServer(t, tc.status, tc.header, tc.body)
		_, err := newTestEmbedder(t, srv.URL).EmbedStrings(t.Context(), []string{"a", "b"})
		var pe *llm.ProviderError
		if !errors.As(err, &pe) {
			t.Errorf("%s: err = %v, want a ProviderError", tc.name, err)
			continue
		}
		if pe.Retryable != tc.retryable || (tc.status != 200 && pe.StatusCode != tc.status) {
			t.Errorf("%s: %+v; want status %d, retryable %v", tc.name, pe, tc.status, tc.retryable)
		}
		if strings.Contains(err.Error(), "sk-") || strings.Contains(err.Error(), "key=1") {
			t.Errorf("%s: error leaks a secret: %v", tc.name, err)
		}
		if d := describeEmbeddingError(err); !strings.Contains(d, tc.describe) || strings.Contains(d, "sk-") {
			t.Errorf("%s: describe = %q, want it to say %q", tc.name, d, tc.describe)
		}
		if tc.name == "rate limited" && pe.RetryAfter != 7*time.Second {
			t.Errorf("RetryAfter = %v, want 7s", pe.RetryAfter)
		}
	}
}

func TestEmbedderTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	e, err := NewOpenAIEmbedder(EmbeddingOptions{BaseURL: srv.URL, Model: "m", Timeout: 50 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.EmbedStrings(t.Context(), []string{"x"})
	if pe := providerError(err); pe == nil || !pe.Retryable || describeEmbeddingError(err) != "the embedding endpoint at "+pe.Host+" did not respond in time" {
		t.Errorf("timeout: %v (%q)", err, describeEmbeddingError(err))
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = e.EmbedStrings(ctx, []string{"x"})
	if pe := providerError(err); pe == nil || pe.Retryable || !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}

func TestNewEmbedder(t *testing.T) {
	t.Parallel()
	if e, err := NewEmbedder(EmbeddingOptions{}); e != nil || err != nil {
		t.Errorf("no provider: %v, %v; want nil, nil", e, err)
	}
	if _, err := NewEmbedder(EmbeddingOptions{Provider: "cohere", BaseURL: "http://x", Model: "m"}); err == nil ||
		err.Error() != `knowledge: unknown embedding provider "cohere" (known: openai)` {
		t.Errorf("unknown provider: %v", err)
	}
	for _, base := range []string{"", "localhost:8080", "ftp://x", "http://"} {
		if _, err := NewEmbedder(EmbeddingOptions{Provider: "openai", BaseURL: base, Model: "m"}); err == nil {
			t.Errorf("base URL %q accepted", base)
		}
	}
	if _, err := NewEmbedder(EmbeddingOptions{Provider: "openai", BaseURL: "http://x/v1"}); err == nil {
		t.Error("empty model accepted")
	}
}

// config.Validate accepts a fixed set of embedding providers ("" is
// none); each must be registered here and each registered one accepted.
func TestEmbeddersRegisteredAreExactlyTheOnesConfigAccepts(t *testing.T) {
	t.Parallel()
	want := slices.DeleteFunc(config.Implementations("knowledge.embedding.provider"), func(s string) bool { return s == "" })
	slices.Sort(want)
	if got := embedders.Names(); !slices.Equal(got, want) {
		t.Errorf("registered %v, config accepts %v", got, want)
	}
}
