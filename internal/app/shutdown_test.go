package app_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/internal/sseclient"
	"go.uber.org/zap/zaptest"
)

// On SIGTERM (the Serve context ending) chatpipe stops accepting, lets
// running answers finish within the grace period, stops the rest — each
// stream ends with its terminal event and each message is saved — and
// Serve returns cleanly.
func TestShutdownEndsEveryStreamAndSavesEveryMessage(t *testing.T) {
	provider := providertest.New(t)
	cfg := baseConfig(t, provider)
	cfg.Server.ShutdownGrace = 300 * time.Millisecond
	gate := providertest.NewGate() // never released: these answers outlive the grace period
	defer gate.Release()
	provider.SetDefault(providertest.Script{Chunks: providertest.Answer("one two three four", 4), Hold: gate, HoldAfter: 2})
	quick := providertest.Script{Chunks: providertest.Answer("done in time", 2)}

	modelTransport, clientTransport := &http.Transport{}, &http.Transport{}
	defer modelTransport.CloseIdleConnections()
	defer clientTransport.CloseIdleConnections()
	a, err := app.New(context.Background(), cfg, app.Options{Logger: zaptest.NewLogger(t), HTTPClient: &http.Client{Transport: modelTransport}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.ServeListener(ctx, ln) }()
	h := &harness{t: t, app: a, provider: provider, client: &http.Client{Transport: clientTransport}}
	base := "http://" + ln.Addr().String()
	session := callURL(t, h, base)

	var streams []*sse
	for range 2 {
		streams = append(streams, openURL(t, h, base, session))
	}
	if err := provider.WaitRequests(ctxTimeout(t), 2); err != nil {
		t.Fatal(err)
	}
	provider.Enqueue(quick)
	streams = append(streams, openURL(t, h, base, session))

	stop() // SIGTERM
	for i, s := range streams {
		evs := s.all()
		fin := finished(t, evs)
		h.waitDone(s.messageID())
		want := eventbus.StatusStopped
		if i == 2 {
			want = eventbus.StatusCompleted
		}
		if fin.Status != want {
			t.Errorf("stream %d: finished %+v, want %s", i, fin, want)
		}
		if want == eventbus.StatusStopped && fin.Reason != "shutdown" {
			t.Errorf("stream %d: reason %q", i, fin.Reason)
		}
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	// Reopen the database: every message was saved with its final status.
	h2 := startHarness(t, provider, cfg, "")
	for _, m := range h2.messages(session) {
		if m.Status == "streaming" {
			t.Fatalf("message %s left streaming after shutdown", m.ID)
		}
	}
}

func callURL(t *testing.T, h *harness, base string) string {
	resp, err := h.client.Post(base+"/api/v1/sessions", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct{ ID string }
	_ = jsonDecode(resp, &s)
	return s.ID
}

func openURL(t *testing.T, h *harness, base, session string) *sse {
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/v1/sessions/"+session+"/messages", stringsReader(`{"content":"q"}`))
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	s := &sse{t: t, resp: resp, rd: sseclient.NewReader(resp.Body), cancel: cancel}
	t.Cleanup(s.close)
	return s
}
