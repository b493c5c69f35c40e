package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/mcpclient/mcptest"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// stdioMCP is an mcp.servers entry starting the test MCP server (this
// test binary, re-executed) over stdio.
func stdioMCP(name string, edit ...func(*config.MCPServerLink)) config.MCPServerLink {
	cmd, args, env := mcptest.StdioCommand()
	s := config.MCPServerLink{Name: name, Transport: config.MCPTransportStdio, Command: cmd, Args: args, Env: env,
		ConnectTimeout: 20 * time.Second}
	for _, e := range edit {
		e(&s)
	}
	return s
}

// mcpAgent is the agent mode offering tools, with servers configured.
func mcpAgent(tools []any, servers ...config.MCPServerLink) func(*config.Config) {
	return func(c *config.Config) {
		c.MCP.Servers = servers
		agentMode(map[string]any{"tools": tools})(c)
	}
}

// waitMCP waits until the app is connected to server.
func (h *harness) waitMCP(server string) {
	h.t.Helper()
	if err := h.app.MCPClients().WaitConnected(ctxTimeout(h.t), server); err != nil {
		h.t.Fatalf("MCP server %s: %v", server, err)
	}
}

// toolCallThenAnswer scripts a model that calls tool with args, then
// answers.
func toolCallThenAnswer(p *providertest.Server, id, tool, args, answer string) {
	p.Enqueue(
		providertest.Script{Chunks: append(providertest.ToolCall(0, id, tool, args, 2), providertest.Chunk{FinishReason: "tool_calls"})},
		providertest.Script{Chunks: providertest.Answer(answer, 2)},
	)
}

// offeredTools lists the function names and parameters a provider request
// offered the model.
func offeredTools(body map[string]any) map[string]string {
	out := map[string]string{}
	list, _ := body["tools"].([]any)
	for _, t := range list {
		fn := t.(map[string]any)["function"].(map[string]any)
		params, _ := json.Marshal(fn["parameters"])
		out[fn["name"].(string)] = string(params)
	}
	return out
}

// An agent answer calls a tool of an MCP server over stdio and over HTTP:
// the tool's schema reaches the model, the call and its result are on the
// stream, and the result reaches the model's next request.
func TestAgentCallsMCPServersTools(t *testing.T) {
	remote := config.MCPServerLink{Name: "remote", Transport: config.MCPTransportHTTP, URL: mcptest.NewHTTPServer(t).URL}
	h := newHarness(t, mcpAgent([]any{"local.echo", "remote.*"}, stdioMCP("local"), remote))
	h.waitMCP("local")
	h.waitMCP("remote")
	for _, tc := range []struct{ tool, id string }{{"local__echo", "call_l"}, {"remote__echo", "call_r"}} {
		t.Run(tc.tool, func(t *testing.T) {
			before := len(h.provider.Requests())
			toolCallThenAnswer(h.provider, tc.id, tc.tool, `{"text":"hi"}`, "The tool said hi.")
			evs := h.ask(h.createSession(), "Say hi through the tool").all()
			if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
				t.Fatalf("finished %+v", fin)
			}
			var called bool
			for _, e := range evs {
				if c, ok := e.Payload.(eventbus.ToolCall); ok && e.Type == eventbus.TypeToolCallStart && c.Name == tc.tool {
					called = true
				}
			}
			res := resultsOf(evs)
			if !called || len(res) != 1 || res[0].Status != eventbus.ToolCompleted || res[0].Output != "echo: hi" {
				t.Fatalf("tool call %v, results %+v", called, res)
			}
			reqs := h.provider.Requests()[before:]
			offered := offeredTools(reqs[0].Body)
			if !strings.Contains(offered[tc.tool], `"text"`) {
				t.Fatalf("offered %v", offered)
			}
			if _, ok := offered["local__crash"]; ok {
				t.Fatal("a tool the mode does not list is offered")
			}
			if got := toolMessages(reqs[1].Body); len(got) != 1 || got[0] != tc.id+"=echo: hi" {
				t.Fatalf("sent back %v", got)
			}
		})
	}
}

// A tool marked require_approval in mcp.servers waits for the user.
func TestMCPToolNeedsApproval(t *testing.T) {
	h := newHarness(t, mcpAgent([]any{"local.echo"},
		stdioMCP("local", func(s *config.MCPServerLink) { s.RequireApproval = []string{"echo"} })))
	h.waitMCP("local")
	toolCallThenAnswer(h.provider, "call_ap", "local__echo", `{"text":"ok?"}`, "Done.")
	s := h.ask(h.createSession(), "Echo with approval")
	before := s.until(isType(eventbus.TypeToolCallApprovalRequest))
	if code := h.decide(s.messageID(), "call_ap", eventbus.DecisionAllow); code != http.StatusAccepted {
		t.Fatalf("decide: %d", code)
	}
	evs := append(before, s.all()...)
	if res := resultsOf(evs); len(res) != 1 || res[0].Output != "echo: ok?" || res[0].Status != eventbus.ToolCompleted {
		t.Fatalf("results %+v", res)
	}
}

// A server that dies during a call gives a failed tool result, the answer
// still completes, and the next answer's call reaches the restarted server.
func TestMCPServerKilledMidCallFailsTheCallNotTheStream(t *testing.T) {
	h := newHarness(t, mcpAgent([]any{"local.*"}, stdioMCP("local")))
	h.waitMCP("local")
	toolCallThenAnswer(h.provider, "call_x", "local__crash", `{}`, "The tool failed.")
	evs := h.ask(h.createSession(), "Crash it").all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("finished %+v", fin)
	}
	if res := resultsOf(evs); len(res) != 1 || res[0].Status != eventbus.ToolFailed || !strings.Contains(res[0].Output, "failed during the call") {
		t.Fatalf("results %+v", res)
	}
	toolCallThenAnswer(h.provider, "call_y", "local__echo", `{"text":"back"}`, "It is back.")
	evs = h.ask(h.createSession(), "Echo again").all()
	if res := resultsOf(evs); len(res) != 1 || res[0].Status != eventbus.ToolCompleted || res[0].Output != "echo: back" {
		t.Fatalf("after the restart: %+v", res)
	}
	if st, _ := h.app.MCPClients().Status("local"); st.Restarts < 1 {
		t.Fatalf("status %+v", st)
	}
}

// A tool that hangs fails at its timeout; the answer goes on.
func TestMCPHangingToolHitsItsTimeout(t *testing.T) {
	h := newHarness(t, mcpAgent([]any{"local.slow"}, stdioMCP("local", func(s *config.MCPServerLink) {
		s.ToolTimeouts = map[string]time.Duration{"slow": 300 * time.Millisecond}
	})))
	h.waitMCP("local")
	toolCallThenAnswer(h.provider, "call_s", "local__slow", `{}`, "It took too long.")
	evs := h.ask(h.createSession(), "Be slow").all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("finished %+v", fin)
	}
	if res := resultsOf(evs); len(res) != 1 || res[0].Status != eventbus.ToolFailed || !strings.Contains(res[0].Output, "did not finish within 300ms") {
		t.Fatalf("results %+v", res)
	}
}

// A tool the server adds (tools/list_changed) is offered to the next
// answer of a mode listing the server's tools with "*".
func TestMCPListChangedReachesTheNextAnswer(t *testing.T) {
	h := newHarness(t, mcpAgent([]any{"local.*"}, stdioMCP("local")))
	h.waitMCP("local")
	toolCallThenAnswer(h.provider, "call_a", "local__add_tool", `{"name":"extra"}`, "Added.")
	h.ask(h.createSession(), "Add a tool").all()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := h.app.MCPClients().RemoteTool("local", "extra"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the added tool was never listed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := len(h.provider.Requests())
	toolCallThenAnswer(h.provider, "call_e", "local__extra", `{"text":"x"}`, "Done.")
	evs := h.ask(h.createSession(), "Use the new tool").all()
	if _, ok := offeredTools(h.provider.Requests()[before].Body)["local__extra"]; !ok {
		t.Fatal("the added tool is not offered")
	}
	if res := resultsOf(evs); len(res) != 1 || res[0].Output != "extra: x" {
		t.Fatalf("results %+v", res)
	}
}

// A mode naming a server that mcp.servers does not define, or a tool its
// allow-list leaves out, is a configuration error naming the key.
func TestMCPToolOfAnUnknownServerIsAConfigError(t *testing.T) {
	for _, tc := range []struct {
		tools   []any
		servers []config.MCPServerLink
		want    string
	}{
		{[]any{"nowhere.echo"}, nil, `no MCP server "nowhere" is defined under mcp.servers`},
		{[]any{"local.crash"}, []config.MCPServerLink{stdioMCP("local", func(s *config.MCPServerLink) { s.Tools = []string{"echo"} })},
			"mcp.servers (local).tools does not allow"},
	} {
		cfg := baseConfig(t, providertest.New(t))
		mcpAgent(tc.tools, tc.servers...)(cfg)
		a, err := app.New(context.Background(), cfg, app.Options{Logger: zap.NewNop()})
		if err == nil {
			_ = a.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%v: %v, want %q", tc.tools, err, tc.want)
		}
	}
}

// Editing mcp.servers in config.yaml connects a new server for the next
// answers, and removing it closes its connection (hot reload).
func TestMCPServersFollowConfigReload(t *testing.T) {
	provider := providertest.New(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	cmd, args, env := mcptest.StdioCommand()
	write := func(withServer bool) {
		yaml := "storage:\n  sqlite:\n    path: " + filepath.Join(dir, "db") +
			"\nmodels:\n  default:\n    provider: openai\n    base_url: " + provider.BaseURL() + "\n    model: m\n    retries: 0\n" +
			"default_mode: agent\n"
		if withServer {
			yaml += "mcp:\n  servers:\n    - name: local\n      transport: stdio\n      command: " + cmd +
				"\n      args: [\"" + args[0] + "\"]\n      env: [\"" + env[0] + "\"]\n" +
				"plugins:\n  agent_loop:\n    tools: [local.echo]\n"
		}
		if err := os.WriteFile(path+".tmp", []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	write(false)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, provider, cfg, path)
	if _, ok := h.app.MCPClients().Status("local"); ok {
		t.Fatal("a server before it is configured")
	}
	write(true)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, ok := h.app.MCPClients().Status("local"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the added server was not started after the reload")
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.waitMCP("local")
	toolCallThenAnswer(h.provider, "call_1", "local__echo", `{"text":"reloaded"}`, "Done.")
	evs := h.ask(h.createSession(), "Echo after the reload").all()
	if res := resultsOf(evs); len(res) != 1 || res[0].Output != "echo: reloaded" {
		t.Fatalf("results %+v", res)
	}
	write(false)
	deadline = time.Now().Add(20 * time.Second)
	for {
		if _, ok := h.app.MCPClients().Status("local"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the removed server is still connected after the reload")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
