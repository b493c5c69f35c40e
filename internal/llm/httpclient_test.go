package llm

import (
	"io"
	"net/http"
	"testing"
	"time"
)

func TestReasoningSnifferAcrossReadBoundaries(t *testing.T) {
	t.Parallel()
	body := `data: {"choices":[{"delta":{"content":"say \"reasoning_tokens\": 99"}}]}` + "\n\n" +
		`data: {"choices":[],"usage":{"completion_tokens_details":{"reasoning_tokens": 42},"x":1}}` + "\n\n"
	for cut := 0; cut <= len(body); cut++ {
		ri := &responseInfo{}
		s := &reasoningSniffer{ri: ri}
		s.scan([]byte(body[:cut]))
		s.scan([]byte(body[cut:]))
		if got := ri.getReasoningTokens(); got != 42 {
			t.Fatalf("cut at %d: reasoning tokens = %d, want 42", cut, got)
		}
	}
}

func TestLibraryClient(t *testing.T) {
	t.Parallel()
	base := &http.Client{Timeout: time.Second}
	c := libraryClient(base, 3*time.Second)
	if c.Timeout != 0 {
		t.Errorf("the whole-request timeout must be lifted, got %v", c.Timeout)
	}
	rt := c.Transport.(*recordingTransport).next.(*http.Transport)
	if rt.ResponseHeaderTimeout != 3*time.Second {
		t.Errorf("ResponseHeaderTimeout = %v", rt.ResponseHeaderTimeout)
	}
	if http.DefaultTransport.(*http.Transport).ResponseHeaderTimeout != 0 {
		t.Error("the default transport was modified")
	}
	custom := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, io.EOF })
	c = libraryClient(&http.Client{Transport: custom}, time.Second)
	if _, ok := c.Transport.(*recordingTransport).next.(roundTripFunc); !ok {
		t.Error("a custom RoundTripper should be used as it is")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
