package app_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/mcpclient/mcptest"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// BenchmarkKnowledgeSearch compares one search of the knowledge base
// through POST /api/v1/knowledge/search (hybrid search only) and through
// MCP's knowledge_search (the Go SDK client over Streamable HTTP, running
// search → rerank → merge as the agent's tool does), on the same loopback
// server and documents. The difference is what MCP and the rerank/merge
// stages add.
func BenchmarkKnowledgeSearch(b *testing.B) {
	cfg := benchConfig(b, "http://provider.invalid/v1")
	srv, _ := benchApp(b, cfg, nil)
	for i, doc := range []string{sourdough, teaChinese, strings.Repeat("Bread needs flour, water, salt and time. ", 60)} {
		body := `{"title":"doc ` + string(rune('A'+i)) + `","content":` + jsonString(doc) + `}`
		resp, err := http.Post(srv.URL+"/api/v1/knowledge/documents", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	transport := &http.Transport{}
	b.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport}

	b.Run("http", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := client.Post(srv.URL+"/api/v1/knowledge/search", "application/json",
				strings.NewReader(`{"query":"how often to feed the sourdough starter","top_k":5}`))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
	b.Run("mcp", func(b *testing.B) {
		sess, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: client, DisableStandaloneSSE: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer sess.Close()
		params := &mcp.CallToolParams{Name: "knowledge_search",
			Arguments: map[string]any{"query": "how often to feed the sourdough starter", "top_k": 5}}
		b.ReportAllocs()
		for b.Loop() {
			res, err := sess.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				b.Fatalf("call: %v %+v", err, res)
			}
		}
	})
}

// BenchmarkAgentAnswerWithStdioMCPTool is one whole agent answer over
// POST /api/v1/chat whose model (the fake provider) calls a tool of a
// stdio MCP server once, then answers: two model calls and one tool call
// to another process, per op. BenchmarkStdioToolCall in
// internal/mcpclient measures the tool call alone.
func BenchmarkAgentAnswerWithStdioMCPTool(b *testing.B) {
	provider := providertest.New(b)
	provider.SetResponder(func(r providertest.Request) providertest.Script {
		if strings.Contains(string(r.Raw), `"role":"tool"`) {
			return providertest.Script{Chunks: providertest.Answer("The tool said hi.", 1)}
		}
		return providertest.Script{Chunks: append(providertest.ToolCall(0, "call_b", "local__echo", `{"text":"hi"}`, 1),
			providertest.Chunk{FinishReason: "tool_calls"})}
	})
	cfg := benchConfig(b, provider.BaseURL())
	cmd, args, env := mcptest.StdioCommand()
	cfg.MCP.Servers = []config.MCPServerLink{{Name: "local", Transport: config.MCPTransportStdio, Command: cmd, Args: args, Env: env}}
	cfg.DefaultMode = "agent"
	cfg.Plugins["agent_loop"]["tools"] = []any{"local.echo"}
	srv, _ := benchApp(b, cfg, nil)
	transport := &http.Transport{}
	b.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport}
	ask := func() string {
		resp, err := client.Post(srv.URL+"/api/v1/chat", "application/json",
			strings.NewReader(`{"messages":[{"role":"user","content":"say hi"}]}`))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(ask(), "echo: hi") { // the server starts in the background
		if time.Now().After(deadline) {
			b.Fatal("the MCP tool never answered")
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if out := ask(); !strings.Contains(out, "echo: hi") {
			b.Fatalf("no tool result in %s", out)
		}
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
