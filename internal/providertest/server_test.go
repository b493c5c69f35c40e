package providertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func client(t *testing.T) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func post(t *testing.T, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer k")
	resp, err := client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// dataLines returns the data payloads of an SSE body and how it ended.
func dataLines(t *testing.T, r io.Reader) ([]string, error) {
	t.Helper()
	var out []string
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if p, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
			out = append(out, p)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
	}
}

func TestOpenAIStreamFormat(t *testing.T) {
	t.Parallel()
	srv := New(t)
	srv.Enqueue(Script{Chunks: Answer("Hi there", 2), Usage: &Usage{PromptTokens: 3, CompletionTokens: 2, ReasoningTokens: 1}})
	resp := post(t, testContext(t), srv.BaseURL()+"/chat/completions", `{"model":"gpt-x","stream":true}`)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("content type %q", ct)
	}
	lines, err := dataLines(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	// role preamble, 2 content chunks, finish chunk, usage chunk, [DONE]
	if len(lines) != 6 || lines[5] != "[DONE]" {
		t.Fatalf("lines = %q", lines)
	}
	var first, usage map[string]any
	json.Unmarshal([]byte(lines[1]), &first)
	json.Unmarshal([]byte(lines[4]), &usage)
	delta := first["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	if first["model"] != "gpt-x" || delta["content"] != "Hi t" {
		t.Errorf("chunk = %s", lines[1])
	}
	u := usage["usage"].(map[string]any)
	if u["total_tokens"] != 5.0 || u["completion_tokens_details"].(map[string]any)["reasoning_tokens"] != 1.0 {
		t.Errorf("usage = %s", lines[4])
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Body["model"] != "gpt-x" || reqs[0].Header.Get("Authorization") != "Bearer k" ||
		string(reqs[0].Raw) != `{"model":"gpt-x","stream":true}` {
		t.Errorf("requests = %+v", reqs)
	}
}

func TestScriptsAreTakenInOrderThenDefault(t *testing.T) {
	t.Parallel()
	srv := New(t)
	srv.Enqueue(Script{Status: 500}, Script{Status: 429, Header: map[string]string{"Retry-After": "3"},
		Error: ErrorObject{Message: "slow down", Type: "rate_limit_error", Code: "rate_limit_exceeded"}})
	srv.SetDefault(Script{Status: 418})
	ctx := testContext(t)

	// An unknown path is recorded but takes no script.
	resp := post(t, ctx, srv.URL()+"/v1/embeddings", `{}`)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
	for _, want := range []int{500, 429, 418, 418} {
		resp := post(t, ctx, srv.BaseURL()+"/chat/completions", `{}`)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("status %d, want %d", resp.StatusCode, want)
		}
		if want == 429 {
			if resp.Header.Get("Retry-After") != "3" ||
				string(body) != `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}` {
				t.Errorf("429: %s %v", body, resp.Header)
			}
		}
		if want == 500 && !strings.Contains(string(body), `"message":"Internal Server Error"`) {
			t.Errorf("500 body %s", body)
		}
	}
	if n := len(srv.Requests()); n != 5 {
		t.Errorf("requests = %d", n)
	}
}

func TestHoldWaitChunksAndRelease(t *testing.T) {
	t.Parallel()
	srv := New(t)
	gate := NewGate()
	srv.Enqueue(Script{Chunks: Content("abcd", 4), Hold: gate, HoldAfter: 2})
	resp := post(t, testContext(t), srv.BaseURL()+"/chat/completions", `{}`)
	defer resp.Body.Close()
	if err := gate.WaitReached(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitChunks(testContext(t), 2); err != nil || srv.Chunks() != 2 {
		t.Fatalf("chunks = %d, %v", srv.Chunks(), err)
	}
	gate.Release()
	lines, err := dataLines(t, resp.Body)
	if err != nil || len(lines) != 6 || srv.Chunks() != 4 {
		t.Errorf("lines %q err %v chunks %d", lines, err, srv.Chunks())
	}
}

func TestClientGoingAwayIsAnAbort(t *testing.T) {
	t.Parallel()
	srv := New(t)
	gate := NewGate()
	defer gate.Release()
	srv.Enqueue(Script{Chunks: Answer("never finished", 3), Hold: gate, HoldAfter: 1})
	ctx, cancel := context.WithCancel(testContext(t))
	resp := post(t, ctx, srv.BaseURL()+"/chat/completions", `{}`)
	defer resp.Body.Close()
	if err := gate.WaitReached(testContext(t)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := srv.WaitAbort(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if srv.Aborts() != 1 {
		t.Errorf("aborts = %d", srv.Aborts())
	}
	short, stop := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer stop()
	if err := srv.WaitAbort(short); err == nil {
		t.Error("WaitAbort should consume each abort once")
	}
}

func TestDropBreaksTheConnection(t *testing.T) {
	t.Parallel()
	srv := New(t)
	srv.Enqueue(Script{Chunks: Content("cut off", 2), Drop: true})
	resp := post(t, testContext(t), srv.BaseURL()+"/chat/completions", `{}`)
	defer resp.Body.Close()
	lines, err := dataLines(t, resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(lines) != 3 {
		t.Errorf("lines %q err %v, want 3 lines then unexpected EOF", lines, err)
	}
}

func TestMidStreamErrorAndRaw(t *testing.T) {
	t.Parallel()
	srv := New(t)
	srv.Enqueue(
		Script{Chunks: Content("ab", 2), MidStreamError: &StreamError{After: 1, ErrorObject: ErrorObject{Message: "boom"}}},
		Script{Raw: []string{": ping\r\n\r\n", "data:{}\r\n\r\n"}},
	)
	resp := post(t, testContext(t), srv.BaseURL()+"/chat/completions", `{}`)
	lines, _ := dataLines(t, resp.Body)
	resp.Body.Close()
	if len(lines) != 3 || !strings.Contains(lines[2], `"message":"boom"`) {
		t.Errorf("lines = %q", lines)
	}
	resp = post(t, testContext(t), srv.BaseURL()+"/chat/completions", `{}`)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(raw) != ": ping\r\n\r\ndata:{}\r\n\r\n" {
		t.Errorf("raw = %q", raw)
	}
}

func TestOllamaFormat(t *testing.T) {
	t.Parallel()
	srv := New(t)
	srv.Enqueue(Script{Chunks: append(ReasoningContent("hm", 1), Answer("Hi", 1)...), Usage: &Usage{PromptTokens: 7, CompletionTokens: 2}},
		Script{Status: 404, Error: ErrorObject{Message: "model not found"}})
	resp := post(t, testContext(t), srv.URL()+"/api/chat", `{"model":"llama3"}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if len(lines) != 4 {
		t.Fatalf("lines = %q", lines)
	}
	var think, last map[string]any
	json.Unmarshal([]byte(lines[0]), &think)
	json.Unmarshal([]byte(lines[3]), &last)
	if think["message"].(map[string]any)["thinking"] != "hm" || think["done"] != false || think["model"] != "llama3" {
		t.Errorf("first line %s", lines[0])
	}
	if last["done"] != true || last["done_reason"] != "stop" || last["prompt_eval_count"] != 7.0 || last["eval_count"] != 2.0 {
		t.Errorf("done line %s", lines[3])
	}
	resp = post(t, testContext(t), srv.URL()+"/api/chat", `{}`)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || string(body) != `{"error":"model not found"}` {
		t.Errorf("404: %d %s", resp.StatusCode, body)
	}
}

func TestCloseReleasesHeldStreams(t *testing.T) {
	srv := New(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	gate := NewGate() // never released
	srv.Enqueue(Script{HoldHeaders: gate})
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, srv.BaseURL()+"/chat/completions", strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	if err := gate.WaitReached(testContext(t)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a held stream")
	}
	<-errc
	http.DefaultClient.CloseIdleConnections()
}

func TestSplit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text   string
		pieces int
		want   []string
	}{
		{"", 3, nil},
		{"abc", 1, []string{"abc"}},
		{"abc", 5, []string{"a", "b", "c"}},
		{"abcdefghij", 3, []string{"abcd", "efg", "hij"}},
		{"日本語です", 2, []string{"日本語", "です"}},
	}
	for _, c := range cases {
		got := Split(c.text, c.pieces)
		if !reflect.DeepEqual(got, c.want) || strings.Join(got, "") != c.text {
			t.Errorf("Split(%q, %d) = %q, want %q", c.text, c.pieces, got, c.want)
		}
	}
	if got := ToolCall(2, "id", "f", `{"a":1}`, 3); len(got) != 3 || got[0].ToolCalls[0].ID != "id" ||
		got[1].ToolCalls[0].Name != "" || got[2].ToolCalls[0].Index != 2 {
		t.Errorf("ToolCall = %+v", got)
	}
}
