package llm

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// libraryClient returns the HTTP client handed to the eino-ext components.
// They only accept a client, so the header timeout goes into a clone of its
// transport (ResponseHeaderTimeout: it bounds the wait for headers, never
// the stream), and a wrapper records each call's response status and
// headers (Retry-After) where the error conversion can find them. A custom,
// non-*http.Transport RoundTripper is used as it is.
func libraryClient(base *http.Client, headerTimeout time.Duration) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if t, ok := rt.(*http.Transport); ok && headerTimeout > 0 {
		t = t.Clone()
		t.ResponseHeaderTimeout = headerTimeout
		rt = t
	}
	c := *base
	c.Timeout = 0
	c.Transport = &recordingTransport{next: rt}
	return &c
}

// recordingTransport stores the response status and headers in the
// responseInfo of the request's context, if it has one.
type recordingTransport struct{ next http.RoundTripper }

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		if ri, ok := req.Context().Value(responseInfoKey{}).(*responseInfo); ok {
			ri.set(resp.StatusCode, resp.Header)
			if ri.sniffReasoning {
				resp.Body = &reasoningSniffer{ReadCloser: resp.Body, ri: ri}
			}
		}
	}
	return resp, err
}

type responseInfoKey struct{}

// responseInfo is what recordingTransport saw of one call's response.
type responseInfo struct {
	sniffReasoning bool // set before the call: watch the body for reasoning_tokens

	mu              sync.Mutex
	status          int
	header          http.Header
	reasoningTokens int
}

// withResponseInfo returns a context whose calls record their response in
// the returned responseInfo.
func withResponseInfo(ctx context.Context) (context.Context, *responseInfo) {
	ri := &responseInfo{}
	return context.WithValue(ctx, responseInfoKey{}, ri), ri
}

func (ri *responseInfo) setReasoningTokens(n int) {
	ri.mu.Lock()
	ri.reasoningTokens = n
	ri.mu.Unlock()
}

func (ri *responseInfo) getReasoningTokens() int {
	ri.mu.Lock()
	defer ri.mu.Unlock()
	return ri.reasoningTokens
}

// reasoningSniffer watches a streamed body for `"reasoning_tokens": N`.
// eino-ext merges OpenAI's finish chunk with the usage chunk through
// schema.ConcatMessages, which drops the reasoning-token count; this puts
// it back. It matches across Read boundaries and costs a few ns per byte
// on a path that costs ~30 µs per chunk anyway.
type reasoningSniffer struct {
	io.ReadCloser
	ri      *responseInfo
	matched int  // bytes of sniffKey matched so far
	inValue bool // after the key: skipping ':' and spaces, then reading digits
	digits  bool
	value   int
}

const sniffKey = `"reasoning_tokens"`

func (s *reasoningSniffer) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	s.scan(p[:n])
	return n, err
}

func (s *reasoningSniffer) scan(p []byte) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case s.inValue:
			switch {
			case c >= '0' && c <= '9':
				s.digits, s.value = true, s.value*10+int(c-'0')
			case !s.digits && (c == ':' || c == ' ' || c == '\t'):
			default:
				if s.digits {
					s.ri.setReasoningTokens(s.value)
				}
				s.inValue, s.digits, s.value = false, false, 0
			}
		case s.matched == 0:
			j := bytes.IndexByte(p[i:], '"')
			if j < 0 {
				return
			}
			i += j
			s.matched = 1
		case c == sniffKey[s.matched]:
			s.matched++
			if s.matched == len(sniffKey) {
				s.matched, s.inValue = 0, true
			}
		default:
			s.matched = 0
			if c == '"' {
				s.matched = 1
			}
		}
	}
}

func (ri *responseInfo) set(status int, h http.Header) {
	ri.mu.Lock()
	ri.status, ri.header = status, h
	ri.mu.Unlock()
}

func (ri *responseInfo) get() (int, http.Header) {
	ri.mu.Lock()
	defer ri.mu.Unlock()
	return ri.status, ri.header
}

func (ri *responseInfo) retryAfter() time.Duration {
	_, h := ri.get()
	if h == nil {
		return 0
	}
	return parseRetryAfter(h.Get("Retry-After"), time.Now())
}
