package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A finished stream must leave its connection reusable: otherwise every
// question to an HTTPS provider pays a new TLS handshake before its first
// token.
func TestCompletedStreamsReuseTheConnection(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		// The body's terminator follows in a later packet, as it does
		// from real providers behind proxies.
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	m, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "m", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		sr, err := m.Stream(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := sr.Recv(); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatal(err)
				}
				break
			}
		}
		sr.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("3 sequential streams opened %d connections, want 1", n)
	}
}
