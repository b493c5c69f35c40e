package app_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// rawConn is a client on a real socket that writes requests byte by byte
// as it likes.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	rd   *bufio.Reader
}

func (h *harness) dial() *rawConn {
	h.t.Helper()
	conn, err := net.Dial("tcp", h.srv.Listener.Addr().String())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { conn.Close() })
	return &rawConn{t: h.t, conn: conn, rd: bufio.NewReader(conn)}
}

func (c *rawConn) write(s string) error {
	_, err := io.WriteString(c.conn, s)
	return err
}

// response reads one response, waiting at most d.
func (c *rawConn) response(d time.Duration) (*http.Response, string, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(c.rd, nil)
	if err != nil {
		return nil, "", err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body), nil
}

// closedWithin reports whether the server closes the connection within d.
func (c *rawConn) closedWithin(d time.Duration) bool {
	_ = c.conn.SetReadDeadline(time.Now().Add(d))
	_, err := c.rd.ReadByte()
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

// get sends a GET on a fresh connection with extra headers (name, value…).
func (h *harness) rawGet(path string, header ...string) *http.Response {
	h.t.Helper()
	req, _ := http.NewRequest("GET", h.url(path), nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestForgedForwardingHeadersDoNotEscapeTheRateLimit(t *testing.T) {
	limited := func(c *config.Config) {
		c.Limits.RatePerSecond = 0.01
		c.Limits.RateBurst = 2
	}
	t.Run("untrusted peer", func(t *testing.T) {
		h := newHarness(t, limited) // open mode: the limit is per client IP
		codes := make([]int, 4)
		for i := range codes {
			ip := "203.0.113." + strconv.Itoa(i+1)
			codes[i] = h.rawGet("/api/v1/sessions", "X-Forwarded-For", ip, "X-Real-IP", ip).StatusCode
		}
		if codes[0] != http.StatusOK || codes[1] != http.StatusOK || codes[2] != http.StatusTooManyRequests ||
			codes[3] != http.StatusTooManyRequests {
			t.Fatalf("a new forged address per request escaped the limit: %v", codes)
		}
	})
	t.Run("trusted proxy", func(t *testing.T) {
		h := newHarness(t, limited, func(c *config.Config) { c.Server.TrustedProxies = []string{"127.0.0.0/8"} })
		for i := range 4 { // four clients behind the proxy, one request each
			ip := "203.0.113." + strconv.Itoa(i+1)
			if code := h.rawGet("/api/v1/sessions", "X-Forwarded-For", ip).StatusCode; code != http.StatusOK {
				t.Fatalf("client %s behind the trusted proxy: %d", ip, code)
			}
		}
		codes := []int{}
		for range 3 { // one client behind the proxy, over its limit
			codes = append(codes, h.rawGet("/api/v1/sessions", "X-Forwarded-For", "198.51.100.7").StatusCode)
		}
		if codes[2] != http.StatusTooManyRequests {
			t.Fatalf("the forwarded client was not limited: %v", codes)
		}
	})
}

func TestConfigRejectsAMalformedTrustedProxy(t *testing.T) {
	cfg := config.Default()
	cfg.Server.TrustedProxies = []string{"10.0.0.0/8", "load-balancer"}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "server.trusted_proxies[1]") {
		t.Fatalf("Validate = %v", err)
	}
}

func TestFailedAuthenticationsAreRateLimitedPerClient(t *testing.T) {
	h := newHarness(t, withTwoTenants, func(c *config.Config) {
		c.Limits.FailedAuthPerMinute = 3
		c.Server.TrustedProxies = []string{"127.0.0.1"} // to play a second client
	})
	wrong := "Bearer wrong-key-000000000"
	for i := range 3 {
		if code := h.rawGet("/api/v1/sessions", "Authorization", wrong).StatusCode; code != http.StatusUnauthorized {
			t.Fatalf("wrong key %d: %d", i, code)
		}
	}
	resp := h.rawGet("/api/v1/sessions", "Authorization", wrong)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("4th wrong key in a minute: %d", resp.StatusCode)
	}
	if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || n < 1 || n > 60 {
		t.Fatalf("Retry-After = %q", resp.Header.Get("Retry-After"))
	}
	// A guess is not even checked now, so a right one cannot get through...
	if code := h.rawGet("/api/v1/sessions", "Authorization", "Bearer "+acmeKey).StatusCode; code != http.StatusTooManyRequests {
		t.Fatalf("a key from a throttled client was checked: %d", code)
	}
	// ...on the OpenAI-compatible API either, which answers in its shape.
	resp = h.do(context.Background(), "GET", "/v1/models", "", "Authorization", wrong)
	e := openAIErrorOf(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests || e.Type != "rate_limit_error" {
		t.Fatalf("OpenAI API: %d %+v", resp.StatusCode, e)
	}
	// Another client is not affected.
	other := []string{"X-Forwarded-For", "198.51.100.9"}
	if code := h.rawGet("/api/v1/sessions", append(other, "Authorization", "Bearer "+acmeKey)...).StatusCode; code != http.StatusOK {
		t.Fatalf("another client with a right key: %d", code)
	}
}

// openAIErrorOf decodes an OpenAI-shaped error.
func openAIErrorOf(t *testing.T, resp *http.Response) struct{ Type, Code, Message string } {
	t.Helper()
	defer resp.Body.Close()
	var body struct {
		Error struct{ Type, Code, Message string }
	}
	_ = jsonDecode(resp, &body)
	return body.Error
}

func TestSlowRequestBodyIsCutAfterTheReadDeadline(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.Server.BodyReadTimeout = 300 * time.Millisecond })
	c := h.dial()
	if err := c.write("POST /api/v1/sessions HTTP/1.1\r\nHost: chatpipe\r\nContent-Type: application/json\r\n" +
		"Content-Length: 100000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() { // one byte every 50 ms, for as long as the server listens
		defer close(trickled)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if c.write(" ") != nil {
					return
				}
			}
		}
	}()
	defer func() { close(stop); <-trickled }()
	resp, body, err := c.response(5 * time.Second)
	if err != nil {
		t.Fatalf("no answer to a trickled body within 5s (deadline 300ms): %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(body, "body_timeout") {
		t.Fatalf("answer: %d %s", resp.StatusCode, body)
	}
	if !c.closedWithin(2 * time.Second) {
		t.Fatal("the connection stayed open after the body deadline")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("cut after %v", d)
	}
}

func TestUnauthorizedRequestIsAnsweredWithoutReadingItsBody(t *testing.T) {
	h := newHarness(t, withTwoTenants) // body_read_timeout stays at its default, 30s
	c := h.dial()
	if err := c.write("POST /api/v1/sessions HTTP/1.1\r\nHost: chatpipe\r\nAuthorization: Bearer wrong-key-0000\r\n" +
		"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"title\":"); err != nil {
		t.Fatal(err)
	}
	resp, _, err := c.response(3 * time.Second)
	if err != nil {
		t.Fatalf("no 401 while the body is still outstanding: %v", err)
	}
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Fatalf("answer: %d, close %v", resp.StatusCode, resp.Close)
	}
	if !c.closedWithin(2 * time.Second) {
		t.Fatal("the server kept reading the body of a request it refused")
	}
}

func TestStreamsOutliveTheBodyReadDeadline(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.Server.BodyReadTimeout = 200 * time.Millisecond })
	slow := providertest.Script{Chunks: providertest.Answer("one two three four five six", 6), Delay: 150 * time.Millisecond}
	h.provider.SetDefault(slow)

	start := time.Now()
	evs := h.ask(h.createSession(), "hello").all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("session stream: %+v", fin)
	}
	if got := text(evs, eventbus.TypeAnswerDelta); got != "one two three four five six" {
		t.Fatalf("answer = %q", got)
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("the stream lasted %v, not longer than the deadline", d)
	}
	evs = h.chatStateless(`{"messages":[{"role":"user","content":"hello"}]}`).all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("stateless stream: %+v", fin)
	}
	resp := h.do(ctxTimeout(t), "POST", "/v1/chat/completions",
		`{"model":"chat","stream":true,"messages":[{"role":"user","content":"hello"}]}`)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(data), `"finish_reason":"stop"`) || !strings.HasSuffix(strings.TrimSpace(string(data)), "[DONE]") {
		t.Fatalf("OpenAI stream: %s", data)
	}
}

func TestStatelessChatClientThatLeavesStopsTheGeneration(t *testing.T) {
	h := newHarness(t)
	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Content("one two three", 3), Hold: gate, HoldAfter: 1})
	s := h.chatStateless(`{"messages":[{"role":"user","content":"count"}]}`)
	id := s.messageID()
	s.until(isType(eventbus.TypeAnswerDelta))
	s.close()
	if err := h.provider.WaitAbort(ctxTimeout(t)); err != nil {
		t.Fatalf("the provider call went on after the client left: %v", err)
	}
	h.waitDone(id)
}
