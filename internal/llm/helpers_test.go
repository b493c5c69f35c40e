package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/internal/providertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openAIClient builds one of the OpenAI-compatible clients, so each
// dialect test runs against all of them.
type openAIClient struct {
	name string
	new  func(cfg OpenAIConfig) (model.ToolCallingChatModel, error)
}

var openAIClients = []openAIClient{
	{"lean", func(cfg OpenAIConfig) (model.ToolCallingChatModel, error) { return NewOpenAI(cfg) }},
	{"eino", NewEinoOpenAI},
}

// httpClient returns a client with its own connection pool, emptied when
// the test ends, so no keep-alive goroutine outlives the test.
func httpClient(t testing.TB) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// newOpenAIModel returns the client c talking to srv.
func newOpenAIModel(t testing.TB, c openAIClient, srv *providertest.Server, mod func(*OpenAIConfig)) model.ToolCallingChatModel {
	t.Helper()
	cfg := OpenAIConfig{BaseURL: srv.BaseURL(), Model: "fake-model", APIKey: "sk-test-secret", HTTPClient: httpClient(t),
		HeaderTimeout: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	m, err := c.new(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newOllamaModel(t testing.TB, srv *providertest.Server, mod func(*OllamaConfig)) *Ollama {
	t.Helper()
	cfg := OllamaConfig{BaseURL: srv.URL(), Model: "llama3", HTTPClient: httpClient(t), HeaderTimeout: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	m, err := NewOllama(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// testContext is a context that ends with the test (or after 20s, so a
// hang fails instead of blocking the suite).
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// result is everything a stream produced.
type result struct {
	chunks []*schema.Message
	merged *schema.Message // ConcatMessages of chunks (nil if none)
	usage  *schema.TokenUsage
	err    error // the error Stream returned or the first error item
}

// run calls Stream and reads to EOF or the first error, closing the reader.
func run(t testing.TB, ctx context.Context, m model.BaseChatModel, opts ...model.Option) result {
	t.Helper()
	sr, err := m.Stream(ctx, []*schema.Message{schema.UserMessage("hi")}, opts...)
	if err != nil {
		return result{err: err}
	}
	defer sr.Close()
	var r result
	for {
		msg, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			r.err = err
			break
		}
		if msg.ResponseMeta != nil && msg.ResponseMeta.Usage != nil {
			r.usage = msg.ResponseMeta.Usage
		}
		r.chunks = append(r.chunks, msg)
	}
	if len(r.chunks) > 0 {
		merged, err := schema.ConcatMessages(r.chunks)
		if err != nil {
			t.Fatalf("ConcatMessages: %v", err)
		}
		r.merged = merged
	}
	return r
}

func (r result) content() string {
	if r.merged == nil {
		return ""
	}
	return r.merged.Content
}

func (r result) reasoning() string {
	if r.merged == nil {
		return ""
	}
	return r.merged.ReasoningContent
}

func (r result) finish() string {
	if r.merged == nil || r.merged.ResponseMeta == nil {
		return ""
	}
	return r.merged.ResponseMeta.FinishReason
}

// providerError asserts err is a *ProviderError and returns it.
func providerError(t testing.TB, err error) *ProviderError {
	t.Helper()
	var pe *ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("want *ProviderError, got %T: %v", err, err)
	}
	return pe
}
