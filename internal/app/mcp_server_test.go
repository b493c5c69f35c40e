package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/mcpserver"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// bearer adds an API key to every request of an MCP client.
type bearer struct {
	key  string
	base http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.key != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return b.base.RoundTrip(r)
}

// mcpSession connects the Go SDK's client to the harness's /mcp with the
// harness's key; the session is closed at the end of the test.
func (h *harness) mcpSession(opts *mcp.ClientOptions) *mcp.ClientSession {
	h.t.Helper()
	transport := &http.Transport{}
	h.t.Cleanup(transport.CloseIdleConnections)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	sess, err := client.Connect(ctxTimeout(h.t), &mcp.StreamableClientTransport{Endpoint: h.url("/mcp"),
		HTTPClient: &http.Client{Transport: bearer{key: h.token, base: transport}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		h.t.Fatalf("connect to /mcp: %v", err)
	}
	h.t.Cleanup(func() { _ = sess.Close() })
	return sess
}

func callTool(t *testing.T, s *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := s.CallTool(ctxTimeout(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// structured decodes a result's structured content into out.
func structured(t *testing.T, res *mcp.CallToolResult, out any) {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
}

// An MCP client lists chatpipe's tools, searches the knowledge base and
// reads a document page by page, and lists the documents as a resource.
func TestMCPServerSearchesAndFetchesThroughTheSDKClient(t *testing.T) {
	h := newHarness(t)
	doc := h.addDocument("Starter care", sourdough)
	s := h.mcpSession(nil)

	var names []string
	for tool, err := range s.Tools(ctxTimeout(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"ask", "fetch_document", "knowledge_search"}) {
		t.Fatalf("tools = %v", names)
	}

	res := callTool(t, s, "knowledge_search", map[string]any{"query": "how often to feed the sourdough starter", "top_k": 3})
	var found mcpserver.SearchOutput
	structured(t, res, &found)
	if res.IsError || len(found.Passages) == 0 || len(found.Passages) > 3 {
		t.Fatalf("search: %s %+v", resultText(res), found)
	}
	p := found.Passages[0]
	if p.Index != 1 || p.Title != "Starter care" || p.DocumentID != doc.ID || p.Heading == "" || p.Score <= 0 ||
		!strings.Contains(resultText(res), "[1] Starter care") {
		t.Fatalf("first passage %+v, text %q", p, resultText(res))
	}

	var page mcpserver.FetchOutput
	structured(t, callTool(t, s, "fetch_document", map[string]any{"id": doc.ID, "limit": 40}), &page)
	if page.Text != string([]rune(sourdough)[:40]) || page.NextOffset != 40 ||
		page.TotalChars != len([]rune(sourdough)) || page.Title != "Starter care" {
		t.Fatalf("first page %+v", page)
	}
	var rest mcpserver.FetchOutput
	structured(t, callTool(t, s, "fetch_document", map[string]any{"id": doc.ID, "offset": page.NextOffset}), &rest)
	if page.Text+rest.Text != sourdough || rest.NextOffset != 0 {
		t.Fatalf("pages do not add up to the document: %+v", rest)
	}

	var uris []string
	for r, err := range s.Resources(ctxTimeout(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if !slices.Contains(uris, "chatpipe://documents") {
		t.Fatalf("resources = %v", uris)
	}
	list, err := s.ReadResource(ctxTimeout(t), &mcp.ReadResourceParams{URI: "chatpipe://documents"})
	if err != nil || !strings.Contains(list.Contents[0].Text, doc.ID) {
		t.Fatalf("document list: %v %+v", err, list)
	}
	text, err := s.ReadResource(ctxTimeout(t), &mcp.ReadResourceParams{URI: "chatpipe://documents/" + doc.ID})
	if err != nil || text.Contents[0].Text != sourdough {
		t.Fatalf("document: %v %+v", err, text)
	}
}

// ask answers with citations and sources, its progress notifications
// carry the answer as it streams, and a completed answer says so.
func TestMCPAskAnswersWithProgressAndSources(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.DefaultMode = "rag" })
	h.addDocument("Starter care", sourdough)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Feed it twice a day [1].", 3)})
	var mu sync.Mutex
	var progress []string
	answered := make(chan struct{})
	s := h.mcpSession(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, r.Params.Message)
		if strings.Contains(strings.Join(progress, ""), "Feed it twice a day [1].") && len(progress) > 0 {
			select {
			case <-answered:
			default:
				close(answered)
			}
		}
	}})
	res, err := s.CallTool(ctxTimeout(t), &mcp.CallToolParams{Name: "ask", Meta: mcp.Meta{"progressToken": "p1"},
		Arguments: map[string]any{"question": "How often do I feed my starter?"}})
	if err != nil {
		t.Fatal(err)
	}
	var out mcpserver.AskOutput
	structured(t, res, &out)
	if res.IsError || out.Answer != "Feed it twice a day [1]." || out.Status != "completed" || out.Mode != "rag" ||
		len(out.References) == 0 || out.References[0].Title != "Starter care" {
		t.Fatalf("ask: %q %+v", resultText(res), out)
	}
	if txt := resultText(res); !strings.HasPrefix(txt, "Feed it twice a day [1].\n\nSources:\n[1] Starter care") {
		t.Fatalf("text = %q", txt)
	}
	select { // notifications are handled apart from the result: wait for them
	case <-answered:
	case <-ctxTimeout(t).Done():
	}
	mu.Lock()
	all := strings.Join(progress, "")
	mu.Unlock()
	if !strings.Contains(all, "Feed it twice a day [1].") || !strings.Contains(all, "[search]") {
		t.Fatalf("progress = %q", progress)
	}
}

// Cancelling an ask stops the generation as POST …/stop does: the
// provider's request is aborted.
func TestMCPCancelledAskAbortsTheProviderRequest(t *testing.T) {
	h := newHarness(t)
	gate := providertest.NewGate()
	t.Cleanup(gate.Release)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Partial answer that never ends", 6), Hold: gate, HoldAfter: 2})
	started := make(chan struct{}, 16)
	var mu sync.Mutex
	var seen strings.Builder // deltas may come one notification each
	s := h.mcpSession(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		seen.WriteString(r.Params.Message)
		if strings.Contains(seen.String(), "Partial") {
			select {
			case started <- struct{}{}:
			default:
			}
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Meta: mcp.Meta{"progressToken": 7},
			Arguments: map[string]any{"question": "Tell me everything"}})
		errc <- err
	}()
	select {
	case <-started:
	case <-ctxTimeout(t).Done():
		t.Fatal("no progress with the answer's first words")
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled call succeeded")
	}
	if err := h.provider.WaitAbort(ctxTimeout(t)); err != nil {
		t.Fatalf("the provider's request was not aborted: %v", err)
	}
}

// Each key sees its own tenant's documents only; no key is a 401.
func TestMCPTenantIsolationAndAuth(t *testing.T) {
	h := newHarness(t, withTwoTenants)
	doc := h.as(acmeKey).addDocument("Starter care", sourdough)

	acme := h.as(acmeKey).mcpSession(nil)
	var mine mcpserver.SearchOutput
	structured(t, callTool(t, acme, "knowledge_search", map[string]any{"query": "sourdough starter"}), &mine)
	if len(mine.Passages) == 0 {
		t.Fatal("acme does not find its own document")
	}

	beta := h.as(betaKey).mcpSession(nil)
	var theirs mcpserver.SearchOutput
	structured(t, callTool(t, beta, "knowledge_search", map[string]any{"query": "sourdough starter"}), &theirs)
	if len(theirs.Passages) != 0 {
		t.Fatalf("beta finds acme's passages: %+v", theirs)
	}
	if res := callTool(t, beta, "fetch_document", map[string]any{"id": doc.ID}); !res.IsError ||
		!strings.Contains(resultText(res), "no document") {
		t.Fatalf("beta reads acme's document: %q", resultText(res))
	}
	if _, err := beta.ReadResource(ctxTimeout(t), &mcp.ReadResourceParams{URI: "chatpipe://documents/" + doc.ID}); err == nil {
		t.Fatal("beta reads acme's document as a resource")
	}

	for _, key := range []string{"", "not-a-key-000000000000"} {
		req, _ := http.NewRequest("POST", h.url("/mcp"), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "tools") {
			t.Fatalf("key %q: %d %s", key, resp.StatusCode, body)
		}
	}
}

// Bad calls are MCP errors, never a crash: an unknown tool, arguments
// that do not match the schema, a page larger than the bound. Every call
// is counted in /metrics by tool and outcome.
func TestMCPBadInputIsAnErrorAndEveryCallIsCounted(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.MCP.Server.MaxResultChars = 1000 })
	doc := h.addDocument("Long", "# Long\n\n"+strings.Repeat("word ", 1000))
	s := h.mcpSession(nil)

	if _, err := s.CallTool(ctxTimeout(t), &mcp.CallToolParams{Name: "drop_tables", Arguments: map[string]any{}}); err == nil {
		t.Fatal("an unknown tool answered")
	}
	for _, args := range []map[string]any{{"query": 42}, {"query": "x", "top_k": 1000}, {"top_k": 3}} {
		res, err := s.CallTool(ctxTimeout(t), &mcp.CallToolParams{Name: "knowledge_search", Arguments: args})
		if err == nil && !res.IsError {
			t.Fatalf("knowledge_search %v: no error (%q)", args, resultText(res))
		}
	}
	var page mcpserver.FetchOutput
	res := callTool(t, s, "fetch_document", map[string]any{"id": doc.ID, "limit": 1 << 30})
	structured(t, res, &page)
	if len([]rune(page.Text)) != 1000 || page.NextOffset != 1000 {
		t.Fatalf("an oversized page: %d characters, next %d", len([]rune(page.Text)), page.NextOffset)
	}
	if code := h.call("GET", "/healthz", "", nil); code != http.StatusOK {
		t.Fatalf("the server is not healthy after bad calls: %d", code)
	}

	resp := h.do(context.Background(), "GET", "/metrics", "")
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`chatpipe_mcp_server_calls_total{outcome="ok",tool="fetch_document"} 1`,
		`chatpipe_mcp_server_calls_total{outcome="error",tool="unknown"} 1`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Fatalf("metrics lack %s:\n%s", want, grepLines(string(metrics), "chatpipe_mcp_server_calls_total"))
		}
	}
	h.waitLog("MCP call")
}

// read_only leaves ask out; enabled: false turns /mcp off.
func TestMCPReadOnlyAndDisabled(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.MCP.Server.ReadOnly = true })
	s := h.mcpSession(nil)
	res, err := s.ListTools(ctxTimeout(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "ask" {
			t.Fatal("read_only offers ask")
		}
	}
	if _, err := s.CallTool(ctxTimeout(t), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "hi"}}); err == nil {
		t.Fatal("read_only answers ask")
	}

	off := newHarness(t, func(c *config.Config) { c.MCP.Server.Enabled = false })
	if code := off.call("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil); code != http.StatusNotFound {
		t.Fatalf("disabled /mcp: %d", code)
	}
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
