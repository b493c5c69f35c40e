// Package providertest is a fake LLM provider for tests: an httptest
// server that speaks OpenAI chat-completions SSE (POST /v1/chat/completions)
// and Ollama's native NDJSON (POST /api/chat), plays a Script per request,
// and records requests and clients that went away.
//
//	srv := providertest.New(t)
//	srv.Enqueue(providertest.Script{Chunks: providertest.Answer("Hello!", 3)})
//	m, _ := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.BaseURL(), Model: "m"})
//
// Tests wait on events (Gate, WaitRequests, WaitChunks, WaitAbort), never
// on sleeps.
package providertest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Server is the fake provider. Its methods are safe for concurrent use.
type Server struct {
	srv       *httptest.Server
	closing   chan struct{} // closed by Close: releases every held handler
	closeOnce sync.Once

	mu        sync.Mutex
	queue     []Script
	def       Script
	responder func(Request) Script
	requests  []Request
	aborts    int
	consumed  int // aborts already returned by WaitAbort
	chunks    int
	changed   chan struct{} // closed and replaced on every recorded event
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Raw    []byte         // the body as sent
	Body   map[string]any // the body decoded as JSON (nil if it is not an object)
}

// DefaultScript is what a request gets when the queue is empty and
// SetDefault was not called: a short answer with usage.
func DefaultScript() Script {
	return Script{
		Chunks: Answer("Hello from the fake provider.", 4),
		Usage:  &Usage{PromptTokens: 12, CompletionTokens: 6},
	}
}

// New starts a server that closes when the test ends.
func New(t testing.TB) *Server {
	s := &Server{closing: make(chan struct{}), def: DefaultScript(), changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, openAIDialect{})
	})
	mux.HandleFunc("POST /api/chat", func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, ollamaDialect{})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.record(r, false)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"message":"no such endpoint","type":"invalid_request_error"}}`)
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// BaseURL is the OpenAI-style API root, the server URL + "/v1".
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// URL is the server root, the base URL of the Ollama dialect.
func (s *Server) URL() string { return s.srv.URL }

// Close releases held streams, drops open connections and waits for every
// handler to return. It is idempotent and runs on t.Cleanup.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Enqueue adds scripts; each request takes the next one.
func (s *Server) Enqueue(scripts ...Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, scripts...)
}

// SetDefault sets the script of requests that find the queue empty.
func (s *Server) SetDefault(sc Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = sc
}

// SetResponder makes requests that find the queue empty get the script f
// returns for them (instead of the default), e.g. an answer that echoes
// the question so concurrent streams can be told apart.
func (s *Server) SetResponder(f func(Request) Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = f
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Aborts counts the streams whose client went away before the script
// finished.
func (s *Server) Aborts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborts
}

// WaitAbort waits for a client to go away mid-script. Each call consumes
// one abort, so a test that expects two aborts calls it twice.
func (s *Server) WaitAbort(ctx context.Context) error {
	return s.wait(ctx, func() bool {
		if s.aborts > s.consumed {
			s.consumed++
			return true
		}
		return false
	})
}

// WaitRequests waits until n requests have been received.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	return s.wait(ctx, func() bool { return len(s.requests) >= n })
}

// Chunks counts the chunks written and flushed, over all requests.
func (s *Server) Chunks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chunks
}

// WaitChunks waits until n chunks have been written and flushed, over all
// requests.
func (s *Server) WaitChunks(ctx context.Context, n int) error {
	return s.wait(ctx, func() bool { return s.chunks >= n })
}

// wait blocks until cond (called with mu held) is true or ctx ends.
func (s *Server) wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok, ch := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// event applies f under the lock and wakes the waiters.
func (s *Server) event(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
	close(s.changed)
	s.changed = make(chan struct{})
}

// record stores the request and returns it with the script it gets (when
// takeScript; requests to unknown paths get none).
func (s *Server) record(r *http.Request, takeScript bool) (Request, Script) {
	raw, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	_ = json.Unmarshal(raw, &req.Body)
	var sc Script
	s.event(func() {
		s.requests = append(s.requests, req)
		if !takeScript {
			return
		}
		switch {
		case len(s.queue) > 0:
			sc, s.queue = s.queue[0], s.queue[1:]
		case s.responder != nil:
			sc = s.responder(req)
		default:
			sc = s.def
		}
	})
	return req, sc
}

// serve plays the next script in the given dialect.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, d dialect) {
	req, sc := s.record(r, true)
	model, _ := req.Body["model"].(string)
	p := &player{s: s, w: w, rc: http.NewResponseController(w), ctx: r.Context(), d: d, model: model}
	p.play(sc)
}
