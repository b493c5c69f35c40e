package llm

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/internal/chatmodel"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

func retryModel(t *testing.T, srv *providertest.Server, retries int) *chatmodel.Model {
	return &chatmodel.Model{Name: "fast", Provider: "openai", Retries: retries,
		Model: newOpenAIModel(t, openAIClients[0], srv, nil), Options: []model.Option{model.WithTemperature(0.2)}}
}

// drain reads sr to the end and returns the content and the first error.
func drain(first *schema.Message, sr *schema.StreamReader[*schema.Message]) (string, error) {
	defer sr.Close()
	content := ""
	for msg := first; msg != nil; {
		content += msg.Content
		var err error
		msg, err = sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return content, err
		}
	}
	return content, nil
}

func TestRetryAfterServerErrorThenSuccess(t *testing.T) {
	t.Parallel()
	srv := providertest.New(t)
	srv.Enqueue(providertest.Script{Status: 500}, providertest.Script{Chunks: providertest.Answer("second time lucky", 3)})
	first, sr, attempts, err := StreamWithRetry(testContext(t), retryModel(t, srv, 2), []*schema.Message{schema.UserMessage("hi")})
	if err != nil {
		t.Fatal(err)
	}
	content, err := drain(first, sr)
	if err != nil || content != "second time lucky" {
		t.Fatalf("content %q err %v", content, err)
	}
	if attempts != 2 || len(srv.Requests()) != 2 {
		t.Errorf("attempts %d, requests %d, want 2 and 2", attempts, len(srv.Requests()))
	}
	if srv.Requests()[1].Body["temperature"] != 0.2 {
		t.Errorf("the model's options were not applied: %v", srv.Requests()[1].Body["temperature"])
	}
}

func TestRetryWhenTheStreamBreaksBeforeTheFirstChunk(t *testing.T) {
	t.Parallel()
	srv := providertest.New(t)
	srv.Enqueue(providertest.Script{Drop: true, NoRolePreamble: true},
		providertest.Script{Chunks: providertest.Answer("ok", 1)})
	first, sr, attempts, err := StreamWithRetry(testContext(t), retryModel(t, srv, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if content, err := drain(first, sr); content != "ok" || err != nil || attempts != 2 {
		t.Errorf("content %q err %v attempts %d", content, err, attempts)
	}
}

func TestNoRetryAfterTheFirstChunk(t *testing.T) {
	t.Parallel()
	srv := providertest.New(t)
	srv.Enqueue(providertest.Script{Chunks: providertest.Content("partial answer", 2),
		MidStreamError: &providertest.StreamError{After: 1, ErrorObject: providertest.ErrorObject{
			Message: "overloaded", Type: "server_error"}}})
	first, sr, attempts, err := StreamWithRetry(testContext(t), retryModel(t, srv, 3), nil)
	if err != nil {
		t.Fatal(err)
	}
	content, err := drain(first, sr)
	if content == "" || !IsRetryable(err) {
		t.Fatalf("want the first chunk then a (retryable) error, got %q %v", content, err)
	}
	if attempts != 1 || len(srv.Requests()) != 1 {
		t.Errorf("attempts %d, requests %d, want 1 and 1", attempts, len(srv.Requests()))
	}
}

func TestNoRetryOnClientError(t *testing.T) {
	t.Parallel()
	srv := providertest.New(t)
	srv.SetDefault(providertest.Script{Status: 400, Error: providertest.ErrorObject{Message: "bad request"}})
	_, sr, attempts, err := StreamWithRetry(testContext(t), retryModel(t, srv, 3), nil)
	if pe := providerError(t, err); pe.StatusCode != 400 || sr != nil {
		t.Errorf("err %v sr %v", err, sr)
	}
	if attempts != 1 || len(srv.Requests()) != 1 {
		t.Errorf("attempts %d, requests %d, want 1 and 1", attempts, len(srv.Requests()))
	}
}

func TestRetriesAreBounded(t *testing.T) {
	t.Parallel()
	srv := providertest.New(t)
	srv.SetDefault(providertest.Script{Status: 503})
	_, _, attempts, err := StreamWithRetry(testContext(t), retryModel(t, srv, 1), nil)
	if pe := providerError(t, err); pe.StatusCode != 503 {
		t.Errorf("err = %v", err)
	}
	if attempts != 2 || len(srv.Requests()) != 2 {
		t.Errorf("attempts %d, requests %d, want 2 and 2", attempts, len(srv.Requests()))
	}
}

func TestCancelDuringBackoffReturnsPromptly(t *testing.T) {
	t.Parallel()
	srv := providertest.New(t)
	srv.SetDefault(providertest.Script{Status: 429, Header: map[string]string{"Retry-After": "30"}})
	ctx, cancel := context.WithCancel(testContext(t))
	go func() {
		_ = srv.WaitRequests(ctx, 1)
		cancel()
	}()
	start := time.Now()
	_, sr, attempts, err := StreamWithRetry(ctx, retryModel(t, srv, 5), nil)
	if !errors.Is(err, context.Canceled) || sr != nil {
		t.Fatalf("err = %v", err)
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("returned after %v; the backoff should end with the context", elapsed)
	}
	if attempts != 1 || len(srv.Requests()) != 1 {
		t.Errorf("attempts %d, requests %d", attempts, len(srv.Requests()))
	}
}

func TestEmptyStreamIsNotAnError(t *testing.T) {
	t.Parallel()
	srv := providertest.New(t)
	srv.Enqueue(providertest.Script{})
	first, sr, _, err := StreamWithRetry(testContext(t), retryModel(t, srv, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if first != nil {
		t.Errorf("first = %+v, want nil", first)
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	cases := []struct {
		attempt int
		err     error
		want    time.Duration
	}{
		{1, errors.New("x"), 200 * time.Millisecond},
		{2, errors.New("x"), 400 * time.Millisecond},
		{4, errors.New("x"), 1600 * time.Millisecond},
		{5, errors.New("x"), 2 * time.Second},
		{40, errors.New("x"), 2 * time.Second},
		{1, &ProviderError{RetryAfter: 3 * time.Second}, 3 * time.Second},
		{1, &ProviderError{RetryAfter: time.Minute}, 5 * time.Second},
		{5, &ProviderError{RetryAfter: time.Second}, 2 * time.Second},
	}
	for _, c := range cases {
		if got := retryDelay(c.attempt, c.err); got != c.want {
			t.Errorf("retryDelay(%d, %v) = %v, want %v", c.attempt, c.err, got, c.want)
		}
	}
}
