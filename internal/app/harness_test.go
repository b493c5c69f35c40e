package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/internal/sseclient"
)

// harness is a whole chatpipe server on a real listener, backed by a
// SQLite file and the fake OpenAI-compatible provider.
type harness struct {
	t        *testing.T
	app      *app.App
	srv      *httptest.Server
	provider *providertest.Server
	client   *http.Client
	logs     *observer.ObservedLogs // every log line of the server, for tests that wait on one
	token    string                 // sent as "Authorization: Bearer" when set
	base     string                 // the server's URL when it is another process (srv is nil)
	proc     *process               // that process
	conns    *trackedListener       // every client connection, hijacked ones too
}

// trackedListener remembers the connections it accepts, so that a test
// can drop them all as a network failure would: httptest's
// CloseClientConnections forgets the ones the server hijacked (the SSE
// readers the hub serves).
type trackedListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (l *trackedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		if len(l.conns) > 1000 { // forget closed ones now and then
			for old := range l.conns {
				if _, err := old.Write(nil); err != nil {
					delete(l.conns, old)
				}
			}
		}
		l.conns[c] = struct{}{}
		l.mu.Unlock()
	}
	return c, err
}

// dropAll closes every connection accepted so far.
func (l *trackedListener) dropAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.Close()
	}
	clear(l.conns)
}

// dropConnections cuts every client connection, as a dropped network.
func (h *harness) dropConnections() {
	h.srv.CloseClientConnections()
	h.conns.dropAll()
}

// kill ends the server process with SIGKILL.
func (h *harness) kill() { h.proc.kill() }

// newClient is an HTTP client whose idle connections close at test end.
func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// as returns a view of the harness that calls the API with key.
func (h *harness) as(key string) *harness {
	c := *h
	c.token = key
	return &c
}

func intp(n int) *int { return &n }

// newHarness starts a server whose "default" model is the fake provider
// (no retries, before the first chunk or mid-stream, unless a test sets
// them); edits adjust the config first.
func newHarness(t *testing.T, edits ...func(*config.Config)) *harness {
	t.Helper()
	provider := providertest.New(t)
	cfg := baseConfig(t, provider)
	for _, e := range edits {
		e(cfg)
	}
	return startHarness(t, provider, cfg, "")
}

// baseConfig is the built-in config on a fresh SQLite file, with the
// "default" model on the fake provider.
func baseConfig(t *testing.T, provider *providertest.Server) *config.Config {
	cfg := config.Default()
	cfg.Storage.SQLite.Path = filepath.Join(t.TempDir(), "chatpipe.db")
	cfg.Models = map[string]config.Model{
		"default": {Provider: "openai", BaseURL: provider.BaseURL(), Model: "fake-model", Retries: intp(0),
			StreamRetry: config.StreamRetry{Attempts: 1}},
	}
	cfg.DefaultMode = "chat" // these tests are about the engine; rag has tests of its own
	// No model jobs after a turn: they would ask the fake provider too and
	// take the scripts tests queue for answers. Their tests turn them on.
	cfg.Titles.Enabled = false
	cfg.Plugins["load_history"]["compaction"] = map[string]any{"enabled": false}
	return cfg
}

func startHarness(t *testing.T, provider *providertest.Server, cfg *config.Config, configPath string) *harness {
	t.Helper()
	return startHarnessWith(t, provider, cfg, app.Options{ConfigPath: configPath})
}

// startHarnessWith starts a server with opts (its Logger and HTTPClient
// are the harness's own).
func startHarnessWith(t *testing.T, provider *providertest.Server, cfg *config.Config, opts app.Options) *harness {
	t.Helper()
	modelTransport := &http.Transport{}
	clientTransport := &http.Transport{}
	observed, logs := observer.New(zap.InfoLevel)
	logger := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel), zaptest.WrapOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewTee(c, observed)
	})))
	opts.Logger = logger
	opts.HTTPClient = &http.Client{Transport: modelTransport}
	a, err := app.New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	srv := httptest.NewUnstartedServer(a.Handler())
	conns := &trackedListener{Listener: srv.Listener, conns: map[net.Conn]struct{}{}}
	srv.Listener = conns
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		if err := a.Close(); err != nil {
			t.Errorf("app.Close: %v", err)
		}
		modelTransport.CloseIdleConnections()
		clientTransport.CloseIdleConnections()
	})
	return &harness{t: t, app: a, srv: srv, conns: conns, provider: provider, client: &http.Client{Transport: clientTransport}, logs: logs}
}

func (h *harness) url(path string) string {
	if h.base != "" {
		return h.base + path
	}
	return h.srv.URL + path
}

// do sends a request and returns the response; the caller closes the body.
func (h *harness) do(ctx context.Context, method, path, body string, header ...string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, h.url(path), strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// call sends a request and decodes a JSON answer into out (if non-nil).
func (h *harness) call(method, path, body string, out any) int {
	h.t.Helper()
	resp := h.do(context.Background(), method, path, body)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			h.t.Fatalf("%s %s: %d %q: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

func (h *harness) createSession() string {
	h.t.Helper()
	var s handler.SessionJSON
	if code := h.call("POST", "/api/v1/sessions", `{"title":"test"}`, &s); code != http.StatusCreated {
		h.t.Fatalf("create session: %d", code)
	}
	return s.ID
}

// messages lists every message of the session, all branches, in the
// order they were saved.
func (h *harness) messages(session string) []handler.MessageJSON {
	h.t.Helper()
	var out struct{ Messages []handler.MessageJSON }
	if code := h.call("GET", "/api/v1/sessions/"+session+"/messages?all=true", "", &out); code != http.StatusOK {
		h.t.Fatalf("list messages: %d", code)
	}
	return out.Messages
}

func (h *harness) message(session, id string) handler.MessageJSON {
	h.t.Helper()
	for _, m := range h.messages(session) {
		if m.ID == id {
			return m
		}
	}
	h.t.Fatalf("message %s not in session %s", id, session)
	return handler.MessageJSON{}
}

// event is one received SSE frame, decoded.
type event struct {
	eventbus.Event
	ID   string
	Name string
}

// sse is an open event stream.
type sse struct {
	t      *testing.T
	resp   *http.Response
	rd     *sseclient.Reader
	cancel context.CancelFunc
	pings  int
}

// open starts a streaming request; the stream is closed at test end.
func (h *harness) open(method, path, body string, header ...string) *sse {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp := h.do(ctx, method, path, body, header...)
	s := &sse{t: h.t, resp: resp, rd: sseclient.NewReader(resp.Body), cancel: cancel}
	h.t.Cleanup(s.close)
	return s
}

// ask posts a question and returns its event stream.
func (h *harness) ask(session, question string) *sse {
	h.t.Helper()
	body, _ := json.Marshal(map[string]string{"content": question})
	s := h.open("POST", "/api/v1/sessions/"+session+"/messages", string(body))
	if s.resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(s.resp.Body)
		h.t.Fatalf("ask: %d %s", s.resp.StatusCode, data)
	}
	return s
}

// next returns the next event, skipping comments; ok is false at the end.
func (s *sse) next() (event, bool) {
	s.t.Helper()
	for {
		f, err := s.rd.Next()
		if err != nil {
			return event{}, false
		}
		if f.IsComment() {
			s.pings++
			continue
		}
		if f.Data == "" {
			continue // a retry hint
		}
		ev, err := eventbus.Decode([]byte(f.Data))
		if err != nil {
			s.t.Fatalf("frame %q: %v", f.Data, err)
		}
		if f.Event != string(ev.Type) {
			s.t.Fatalf("SSE event line %q does not match the JSON type %q", f.Event, ev.Type)
		}
		return event{Event: ev, ID: f.ID, Name: f.Event}, true
	}
}

// all reads the stream to its end.
func (s *sse) all() []event {
	s.t.Helper()
	var out []event
	for {
		ev, ok := s.next()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// until reads events up to and including the first that matches.
func (s *sse) until(match func(event) bool) []event {
	s.t.Helper()
	var out []event
	for {
		ev, ok := s.next()
		if !ok {
			s.t.Fatalf("stream ended before the awaited event; got %v", types(out))
		}
		out = append(out, ev)
		if match(ev) {
			return out
		}
	}
}

func (s *sse) close() {
	s.cancel()
	_ = s.resp.Body.Close()
}

func (s *sse) messageID() string { return s.resp.Header.Get("X-Message-Id") }

func isType(t eventbus.Type) func(event) bool { return func(e event) bool { return e.Type == t } }

func types(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Type)
	}
	return out
}

func text(evs []event, t eventbus.Type) string {
	var b bytes.Buffer
	for _, e := range evs {
		if e.Type == t {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

func finished(t *testing.T, evs []event) eventbus.Finished {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1].Type != eventbus.TypeStreamFinished {
		t.Fatalf("stream does not end with stream.finished: %v", types(evs))
	}
	n := 0
	for _, e := range evs {
		if e.Type == eventbus.TypeStreamFinished {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d stream.finished events", n)
	}
	return evs[len(evs)-1].Payload.(eventbus.Finished)
}

func firstError(evs []event) (eventbus.Error, bool) {
	for _, e := range evs {
		if e.Type == eventbus.TypeError {
			return e.Payload.(eventbus.Error), true
		}
	}
	return eventbus.Error{}, false
}

// checkSeqs asserts seqs run 1, 2, 3… and match the SSE ids.
func checkSeqs(t *testing.T, evs []event, from int64) {
	t.Helper()
	for i, e := range evs {
		if want := from + int64(i); e.Seq != want || e.ID != itoa(want) {
			t.Fatalf("event %d (%s): seq %d id %q, want %d", i, e.Type, e.Seq, e.ID, want)
		}
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// waitDone waits until the run of a message has saved and finished.
func (h *harness) waitDone(id string) {
	h.t.Helper()
	r, ok := h.app.Runs().Lookup(id)
	if !ok {
		return
	}
	select {
	case <-r.Done():
	case <-time.After(10 * time.Second):
		h.t.Fatalf("run %s did not finish", id)
	}
}

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitLog waits for a log line whose message starts with prefix.
func (h *harness) waitLog(prefix string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, e := range h.logs.All() {
			if strings.HasPrefix(e.Message, prefix) {
				return
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no log line %q", prefix)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// replaceFile writes a file under a temporary name and renames it over
// path: atomic, as editors and configuration management save.
func replaceFile(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
