package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/chatpipe/chatpipe/internal/mcpclient"
	"github.com/chatpipe/chatpipe/internal/mcpclient/mcptest"
	"github.com/chatpipe/chatpipe/internal/remotetool"
)

func TestMain(m *testing.M) {
	mcptest.ServeStdioIfChild()
	goleak.VerifyTestMain(m)
}

// stdioServer is an mcp.servers entry starting the test server over stdio.
func stdioServer(name string) mcpclient.Server {
	cmd, args, env := mcptest.StdioCommand()
	return mcpclient.Server{Name: name, Transport: mcpclient.TransportStdio, Command: cmd, Args: args, Env: env,
		ConnectTimeout: 20 * time.Second}
}

func httpServer(t *testing.T, name string) mcpclient.Server {
	return mcpclient.Server{Name: name, Transport: mcpclient.TransportHTTP, URL: mcptest.NewHTTPServer(t).URL,
		ConnectTimeout: 10 * time.Second}
}

// calls counts the calls the observer saw, by server.tool=outcome.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) MCPClientCall(server, tool, outcome string, _ time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[server+"."+tool+"="+outcome]++
}

func (c *calls) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

func newManager(t *testing.T, servers ...mcpclient.Server) (*mcpclient.Manager, *calls) {
	t.Helper()
	obs := &calls{n: map[string]int{}}
	m := mcpclient.New(mcpclient.Options{Logger: zaptest.NewLogger(t), Observer: obs, MinBackoff: 20 * time.Millisecond})
	t.Cleanup(m.Close)
	m.Apply(servers)
	for _, s := range servers {
		if err := m.WaitConnected(ctxTimeout(t, 20*time.Second), s.Name); err != nil {
			t.Fatalf("connect %s: %v", s.Name, err)
		}
	}
	return m, obs
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func tool(t *testing.T, m *mcpclient.Manager, server, name string) remotetool.Tool {
	t.Helper()
	rt, ok := m.RemoteTool(server, name)
	if !ok {
		st, _ := m.Status(server)
		t.Fatalf("%s.%s not offered (tools: %v)", server, name, st.Tools)
	}
	return rt
}

func call(t *testing.T, m *mcpclient.Manager, server, name, args string) (string, error) {
	t.Helper()
	return tool(t, m, server, name).Call(ctxTimeout(t, 20*time.Second), args)
}

// A tool of a server over stdio and over HTTP answers, and its schema
// and name reach the model as the server wrote them.
func TestToolCallOverStdioAndHTTP(t *testing.T) {
	m, obs := newManager(t, stdioServer("local"), httpServer(t, "remote"))
	for _, server := range []string{"local", "remote"} {
		out, err := call(t, m, server, "echo", `{"text":"hi"}`)
		if err != nil || out != "echo: hi" {
			t.Fatalf("%s: echo = %q, %v", server, out, err)
		}
		info := tool(t, m, server, "echo").Info()
		js, err := info.ToJSONSchema()
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(js)
		if info.Name != server+"__echo" || !strings.Contains(string(raw), `"text"`) || info.Desc != "Echoes the text." {
			t.Fatalf("%s: info %s %q %s", server, info.Name, info.Desc, raw)
		}
		if obs.count(server+".echo=ok") != 1 {
			t.Fatalf("%s: calls observed %v", server, obs.n)
		}
	}
}

// A server that dies in the middle of a call fails that call at once, and
// the next call reaches a restarted server.
func TestServerKilledMidCallFailsAndNextCallReconnects(t *testing.T) {
	m, obs := newManager(t, stdioServer("local"))
	before, err := call(t, m, "local", "pid", "")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := call(t, m, "local", "crash", "{}"); err == nil || !strings.Contains(err.Error(), "failed during the call") {
		t.Fatalf("crash: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the failed call took %v", d)
	}
	after, err := call(t, m, "local", "pid", "")
	if err != nil {
		t.Fatalf("call after the crash: %v", err)
	}
	if after == before {
		t.Fatalf("still process %s: the server was not restarted", after)
	}
	if st, _ := m.Status("local"); !st.Connected || st.Restarts < 1 {
		t.Fatalf("status %+v", st)
	}
	if obs.count("local.crash=failed") != 1 {
		t.Fatalf("calls observed %v", obs.n)
	}
}

// A tool that never answers is given up at the caller's deadline; the
// connection stays usable.
func TestHangingToolEndsAtTheDeadline(t *testing.T) {
	m, obs := newManager(t, stdioServer("local"))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := tool(t, m, "local", "slow").Call(ctx, "{}")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the call returned after %v", d)
	}
	if out, err := call(t, m, "local", "echo", `{"text":"still there"}`); err != nil || out != "echo: still there" {
		t.Fatalf("echo after a timeout: %q %v", out, err)
	}
	if obs.count("local.slow=canceled") != 1 {
		t.Fatalf("calls observed %v", obs.n)
	}
}

// A tool the server adds while connected is offered once the server says
// its list changed.
func TestListChangedOffersTheNewTool(t *testing.T) {
	m, _ := newManager(t, stdioServer("local"))
	if _, ok := m.RemoteTool("local", "extra"); ok {
		t.Fatal("extra offered before it exists")
	}
	if _, err := call(t, m, "local", "add_tool", `{"name":"extra"}`); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool { _, ok := m.RemoteTool("local", "extra"); return ok })
	if out, err := call(t, m, "local", "extra", `{"text":"new"}`); err != nil || out != "extra: new" {
		t.Fatalf("extra: %q %v", out, err)
	}
}

// Only allowed tools are offered, with the server's approval and timeout
// settings.
func TestAllowListApprovalAndTimeouts(t *testing.T) {
	s := stdioServer("local")
	s.Tools = []string{"echo", "slow"}
	s.RequireApproval = []string{"echo"}
	s.Timeout = 7 * time.Second
	s.ToolTimeouts = map[string]time.Duration{"slow": time.Second}
	m, _ := newManager(t, s)
	var names []string
	for _, rt := range m.RemoteToolsOf("local") {
		names = append(names, rt.Info().Name)
	}
	if strings.Join(names, ",") != "local__echo,local__slow" {
		t.Fatalf("offered %v", names)
	}
	if _, ok := m.RemoteTool("local", "crash"); ok {
		t.Fatal("crash offered though not allowed")
	}
	echo, slow := tool(t, m, "local", "echo"), tool(t, m, "local", "slow")
	if !echo.RequireApproval() || slow.RequireApproval() || echo.Timeout() != 7*time.Second || slow.Timeout() != time.Second {
		t.Fatalf("echo %v %v, slow %v %v", echo.RequireApproval(), echo.Timeout(), slow.RequireApproval(), slow.Timeout())
	}
}

// Bad arguments, tool errors and huge results are errors or bounded
// text, never a crash.
func TestBadInputAndOversizedResults(t *testing.T) {
	s := stdioServer("local")
	s.MaxResultChars = 1000
	m, obs := newManager(t, s)
	for _, tc := range []struct{ tool, args, want string }{
		{"echo", `[1,2]`, "must be a JSON object"},
		{"echo", `{"text":5}`, "text"},
		{"fail", `{}`, "the tool failed on purpose"},
	} {
		if _, err := call(t, m, "local", tc.tool, tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s %s: %v, want an error with %q", tc.tool, tc.args, err, tc.want)
		}
	}
	out, err := call(t, m, "local", "big", `{"chars":500000}`)
	if err != nil || len(out) > 1100 || !strings.Contains(out, "cut at 1000 of 500000 characters") {
		t.Fatalf("big: %d chars, %v", len(out), err)
	}
	if obs.count("local.fail=tool_error") != 1 {
		t.Fatalf("calls observed %v", obs.n)
	}
}

// A reload adds and removes servers; a tool of a removed server fails.
func TestApplyAddsAndRemovesServers(t *testing.T) {
	a := stdioServer("a")
	m, _ := newManager(t, a)
	old := tool(t, m, "a", "echo")
	b := httpServer(t, "b")
	m.Apply([]mcpclient.Server{a, b})
	if err := m.WaitConnected(ctxTimeout(t, 10*time.Second), "b"); err != nil {
		t.Fatal(err)
	}
	if same := tool(t, m, "a", "echo"); same != old {
		t.Fatal("an unchanged server was reconnected")
	}
	m.Apply([]mcpclient.Server{b})
	if _, ok := m.RemoteTool("a", "echo"); ok {
		t.Fatal("a removed server's tool is still offered")
	}
	if _, err := old.Call(ctxTimeout(t, 5*time.Second), `{"text":"x"}`); err == nil {
		t.Fatal("a removed server's tool answered")
	}
	if out, err := call(t, m, "b", "echo", `{"text":"b"}`); err != nil || out != "echo: b" {
		t.Fatalf("b: %q %v", out, err)
	}
}

// eventually waits for cond, which an event in another goroutine makes
// true (a notification from the server).
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkStdioToolCall is one call of a tool of a stdio MCP server (a
// child process) through the manager: what an agent's tool call to such
// a server costs chatpipe, server work aside.
func BenchmarkStdioToolCall(b *testing.B) {
	cmd, args, env := mcptest.StdioCommand()
	m := mcpclient.New(mcpclient.Options{})
	defer m.Close()
	m.Apply([]mcpclient.Server{{Name: "local", Transport: mcpclient.TransportStdio, Command: cmd, Args: args, Env: env}})
	ctx := context.Background()
	if err := m.WaitConnected(ctx, "local"); err != nil {
		b.Fatal(err)
	}
	echo, _ := m.RemoteTool("local", "echo")
	b.ReportAllocs()
	for b.Loop() {
		if out, err := echo.Call(ctx, `{"text":"hi"}`); err != nil || out != "echo: hi" {
			b.Fatalf("%q %v", out, err)
		}
	}
}
