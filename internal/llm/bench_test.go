package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/internal/providertest"
)

// A realistic content delta as OpenAI sends it, with the fields a client
// must skip (id, object, created, model, system_fingerprint, logprobs).
var (
	benchPreamble = `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,` +
		`"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"role":"assistant",` +
		`"content":"","refusal":null},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	benchDelta = `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,` +
		`"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":" token"},` +
		`"logprobs":null,"finish_reason":null}]}` + "\n\n"
	benchTail = "data: " + providertest.ChunkJSON(providertest.Chunk{FinishReason: "stop"}) + "\n\n" +
		"data: " + providertest.UsageJSON(providertest.Usage{PromptTokens: 10, CompletionTokens: 100}) + "\n\ndata: [DONE]\n\n"
)

// repeatBody is an in-memory SSE body: head, n copies of line, tail.
type repeatBody struct {
	head, line, tail string
	n                int
	cur              string
	stage            int
}

func (r *repeatBody) Read(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		if r.cur == "" {
			switch {
			case r.stage == 0:
				r.cur, r.stage = r.head, 1
			case r.stage == 1 && r.n > 0:
				r.cur = r.line
				r.n--
			case r.stage == 1:
				r.cur, r.stage = r.tail, 2
			default:
				if total == 0 {
					return 0, io.EOF
				}
				return total, nil
			}
		}
		c := copy(p, r.cur)
		r.cur, p, total = r.cur[c:], p[c:], total+c
	}
	return total, nil
}

func (r *repeatBody) Close() error { return nil }

// memTransport answers every request with n deltas from memory, so the
// benchmark measures the client, not the network.
type memTransport struct{ n int }

func (t memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"text/event-stream"}},
		Body:    &repeatBody{head: benchPreamble, line: benchDelta, tail: benchTail, n: t.n},
		Request: req,
	}, nil
}

// consume reads a stream to the end and returns the number of content deltas.
func consume(b *testing.B, sr *schema.StreamReader[*schema.Message]) int {
	defer sr.Close()
	n := 0
	for {
		msg, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		if msg.Content != "" {
			n++
		}
	}
}

// BenchmarkStreamDelta measures one streamed content delta (b.N deltas in
// one stream): SSE parsing, JSON decoding, the message and the pipe hop
// to the reader. The loopback variants add a real HTTP connection to the
// fake provider (whose own writing cost is included).
func BenchmarkStreamDelta(b *testing.B) {
	msgs := []*schema.Message{schema.UserMessage("hi")}
	for _, c := range openAIClients {
		b.Run(c.name, func(b *testing.B) {
			m, err := c.new(OpenAIConfig{BaseURL: "http://mem.invalid/v1", Model: "m",
				HTTPClient: &http.Client{Transport: memTransport{n: b.N}}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			sr, err := m.Stream(context.Background(), msgs)
			if err != nil {
				b.Fatal(err)
			}
			if n := consume(b, sr); n != b.N {
				b.Fatalf("got %d deltas, want %d", n, b.N)
			}
		})
	}
	for _, c := range openAIClients {
		b.Run(c.name+"-loopback", func(b *testing.B) {
			srv := providertest.New(b)
			raw := make([]string, 0, b.N+2)
			raw = append(raw, benchPreamble)
			for range b.N {
				raw = append(raw, benchDelta)
			}
			srv.Enqueue(providertest.Script{Raw: append(raw, benchTail)})
			m := newOpenAIModel(b, c, srv, nil)
			b.ReportAllocs()
			b.ResetTimer()
			sr, err := m.Stream(context.Background(), msgs)
			if err != nil {
				b.Fatal(err)
			}
			if n := consume(b, sr); n != b.N {
				b.Fatalf("got %d deltas, want %d", n, b.N)
			}
		})
	}
}

// BenchmarkDecodeContentDelta is the JSON decoding of one delta alone.
func BenchmarkDecodeContentDelta(b *testing.B) {
	data := []byte(strings.TrimSuffix(strings.TrimPrefix(benchDelta, "data: "), "\n\n"))
	var d chunkDecoder
	var c chunk
	b.ReportAllocs()
	for b.Loop() {
		if err := d.decode(data, &c); err != nil {
			b.Fatal(err)
		}
	}
}
