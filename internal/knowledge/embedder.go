package knowledge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudwego/eino/components/embedding"

	"github.com/chatpipe/chatpipe/internal/llm"
	"github.com/chatpipe/chatpipe/internal/registry"
	"github.com/chatpipe/chatpipe/internal/telemetry"
)

// We speak /v1/embeddings ourselves rather than through eino-ext's
// embedding/openai: the request is one small JSON POST, and owning it means
// failures come back as llm.ProviderError (status, Retry-After, host, a
// redacted message) like every other model call, with no extra module
// versions pulled in beside the chat clients'.

var _ embedding.Embedder = (*OpenAIEmbedder)(nil)

// maxEmbeddingResponseBytes bounds what one embeddings response may hold
// (32 texts × 3072 dimensions as JSON is about 2 MB).
const maxEmbeddingResponseBytes = 64 << 20

// OpenAIEmbedder is a client of an OpenAI-compatible embeddings endpoint
// (OpenAI, Ollama's /v1, vLLM, TEI, …) implementing eino's
// embedding.Embedder. It is immutable and safe for concurrent use.
type OpenAIEmbedder struct {
	endpoint   string
	host       string
	model      string
	dimensions int
	timeout    time.Duration
	client     *http.Client
	header     http.Header
}

// EmbedderFactory builds the embedder of `knowledge.embedding`; client
// sends its requests (nil = http.DefaultClient).
type EmbedderFactory func(cfg EmbeddingOptions, client *http.Client) (embedding.Embedder, error)

// embedders are the embedders, by the value of `knowledge.embedding.provider`.
var embedders = registry.New[EmbedderFactory]("embedding provider")

func init() {
	embedders.Register("openai", func(cfg EmbeddingOptions, client *http.Client) (embedding.Embedder, error) {
		e, err := NewOpenAIEmbedder(cfg, client)
		if err != nil {
			return nil, err // not a nil *OpenAIEmbedder in a non-nil interface
		}
		return e, nil
	})
}

// NewEmbedder returns the embedder cfg configures, or nil (and no error)
// when cfg.Provider is empty: search is then keyword-only.
func NewEmbedder(cfg EmbeddingOptions) (embedding.Embedder, error) {
	return NewEmbedderWithClient(cfg, nil)
}

// NewEmbedderWithClient is NewEmbedder with the HTTP client its requests
// go through (nil = http.DefaultClient).
func NewEmbedderWithClient(cfg EmbeddingOptions, client *http.Client) (embedding.Embedder, error) {
	if cfg.Provider == "" {
		return nil, nil
	}
	newEmbedder, err := embedders.Get(cfg.Provider)
	if err != nil {
		return nil, fmt.Errorf("knowledge: %w", err)
	}
	return newEmbedder(cfg, client)
}

// NewOpenAIEmbedder returns a client for cfg's base URL, model, key,
// dimensions and per-request timeout. client nil means http.DefaultClient.
func NewOpenAIEmbedder(cfg EmbeddingOptions, client *http.Client) (*OpenAIEmbedder, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("knowledge: embedding base_url must be an http(s) URL such as https://api.openai.com/v1")
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("knowledge: embedding model is required")
	}
	if client == nil {
		client = http.DefaultClient
	}
	e := &OpenAIEmbedder{
		endpoint:   strings.TrimRight(cfg.BaseURL, "/") + "/embeddings",
		host:       hostPort(u),
		model:      cfg.Model,
		dimensions: cfg.Dimensions,
		timeout:    cfg.Timeout,
		client:     client,
		header:     http.Header{"Content-Type": {"application/json"}, "User-Agent": {"chatpipe"}},
	}
	if cfg.APIKey != "" {
		e.header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	return e, nil
}

// Model is the model the embedder asks for.
func (e *OpenAIEmbedder) Model() string { return e.model }

type embeddingsRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     int      `json:"dimensions,omitempty"`
	EncodingFormat string   `json:"encoding_format"`
}

type embeddingsResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

// EmbedStrings returns one vector per text, in order. Errors are
// *llm.ProviderError. Each call is a span (GenAI embeddings).
func (e *OpenAIEmbedder) EmbedStrings(ctx context.Context, texts []string, opts ...embedding.Option) ([][]float64, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	model := e.model
	if o := embedding.GetCommonOptions(nil, opts...); o.Model != nil && *o.Model != "" {
		model = *o.Model
	}
	ctx, call := telemetry.StartModelCall(ctx, "embeddings", "openai", model, "knowledge.embedding")
	if call.Recording() {
		call.Span().SetAttributes(telemetry.GenAIEmbeddingsInputs.Int(len(texts)))
	}
	vectors, tokens, err := e.embed(ctx, model, texts)
	call.End(tokens, 0, false, "", err)
	return vectors, err
}

// embed is one embeddings request; tokens is the provider's count of input tokens.
func (e *OpenAIEmbedder) embed(ctx context.Context, model string, texts []string) (_ [][]float64, tokens int, _ error) {
	body, err := json.Marshal(embeddingsRequest{Model: model, Input: texts, Dimensions: e.dimensions, EncodingFormat: "float"})
	if err != nil {
		return nil, 0, &llm.ProviderError{Host: e.host, Err: err}
	}
	if e.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, 0, &llm.ProviderError{Host: e.host, Err: err}
	}
	req.Header = e.header.Clone()
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, 0, e.networkError(ctx, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbeddingResponseBytes+1))
	if err != nil {
		return nil, 0, e.networkError(ctx, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, 0, e.statusError(resp, raw)
	}
	if len(raw) > maxEmbeddingResponseBytes {
		return nil, 0, &llm.ProviderError{Host: e.host, Message: "embeddings response too large"}
	}
	var out embeddingsResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, 0, &llm.ProviderError{Host: e.host, Message: "embeddings response is not valid JSON", Err: err}
	}
	vectors := make([][]float64, len(texts))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(texts) || vectors[d.Index] != nil || len(d.Embedding) == 0 {
			return nil, 0, &llm.ProviderError{Host: e.host, Message: fmt.Sprintf("embeddings response has a bad entry at index %d", d.Index)}
		}
		vectors[d.Index] = d.Embedding
	}
	for i, v := range vectors {
		if v == nil {
			return nil, 0, &llm.ProviderError{Host: e.host, Message: fmt.Sprintf("embeddings response lacks index %d of %d", i, len(texts))}
		}
	}
	return vectors, out.Usage.PromptTokens, nil
}

func (e *OpenAIEmbedder) networkError(ctx context.Context, err error) *llm.ProviderError {
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		// Our own per-request timeout may be retried; the caller's cancel not.
		return &llm.ProviderError{Host: e.host, Err: cause, Retryable: errors.Is(cause, context.DeadlineExceeded)}
	}
	return &llm.ProviderError{Host: e.host, Retryable: true, Err: err}
}

func (e *OpenAIEmbedder) statusError(resp *http.Response, body []byte) *llm.ProviderError {
	s := resp.StatusCode
	pe := &llm.ProviderError{
		StatusCode: s,
		Host:       e.host,
		Message:    errorMessage(body),
		Retryable:  s == http.StatusTooManyRequests || s == http.StatusRequestTimeout || s == http.StatusConflict || s >= 500,
	}
	if secs, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && secs > 0 {
		pe.RetryAfter = time.Duration(secs) * time.Second
	}
	return pe
}

// errorMessage extracts the message of an OpenAI-style error body
// ({"error":{"message":…}}, {"error":"…"}, {"message":…}, {"detail":…}),
// without anything that looks like a key, shortened to 300 characters.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	msg := ""
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var str string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			msg = obj.Message
		case json.Unmarshal(v.Error, &str) == nil && str != "":
			msg = str
		case v.Message != "":
			msg = v.Message
		case v.Detail != nil:
			msg = fmt.Sprint(v.Detail)
		}
	} else if t := strings.TrimSpace(string(body)); t != "" && t[0] != '<' {
		msg = t
	}
	words := strings.Fields(msg)
	for i, w := range words {
		if strings.Contains(w, "sk-") || (i > 0 && strings.EqualFold(words[i-1], "bearer")) || strings.Contains(w, "://") {
			words[i] = "[redacted]"
		}
	}
	msg = strings.Join(words, " ")
	if utf8.RuneCountInString(msg) > 300 {
		msg = string([]rune(msg)[:300]) + "…"
	}
	return msg
}

// hostPort is host:port of u, for messages; never credentials.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// providerError returns the *llm.ProviderError in err's chain, or nil.
func providerError(err error) *llm.ProviderError {
	var pe *llm.ProviderError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// describeEmbeddingError says for people why an embeddings call failed,
// naming the endpoint but never a key or the provider's own words (they
// may echo input).
func describeEmbeddingError(err error) string {
	var pe *llm.ProviderError
	if !errors.As(err, &pe) {
		return "the embedding model returned unusable vectors"
	}
	at := ""
	if pe.Host != "" {
		at = " at " + pe.Host
	}
	code, _, _ := llm.Describe(err, "embedding")
	switch {
	case pe.StatusCode == http.StatusUnauthorized || pe.StatusCode == http.StatusForbidden:
		return "the embedding endpoint" + at + " rejected the credentials (check knowledge.embedding.api_key)"
	case code == "rate_limited":
		return "the embedding endpoint" + at + " is rate-limiting requests"
	case pe.StatusCode != 0:
		return fmt.Sprintf("the embedding endpoint%s returned HTTP %d", at, pe.StatusCode)
	case code == "timeout":
		return "the embedding endpoint" + at + " did not respond in time"
	case code == "canceled":
		return "the request was canceled"
	case code == "provider_unreachable":
		return "the embedding endpoint" + at + " is unreachable"
	case pe.Message != "": // we set a message only for a response we could not use
		return "the embedding endpoint" + at + " sent an unusable response"
	}
	return "the embedding endpoint" + at + " failed"
}
