// Package mcptest is a small MCP server built with the Go SDK, for tests
// of chatpipe's MCP client: over stdio (a test binary re-executes itself
// with ServeStdioIfChild in its TestMain) and over Streamable HTTP
// (NewHTTPServer). Its tools echo, hang, fail, crash the process, return
// large results and add tools at run time (tools/list_changed).
package mcptest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ChildEnv is the environment variable that makes a test binary serve
// MCP over stdio instead of running its tests (see ServeStdioIfChild).
const ChildEnv = "CHATPIPE_MCPTEST_STDIO"

// ServeStdioIfChild serves the test server over stdin/stdout and exits
// when the test binary was started as a server (ChildEnv=1); otherwise it
// returns at once. Call it first in TestMain.
func ServeStdioIfChild() {
	if os.Getenv(ChildEnv) != "1" {
		return
	}
	err := NewServer().Run(context.Background(), &mcp.StdioTransport{})
	if err != nil && !strings.Contains(err.Error(), "EOF") {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// StdioCommand is how a test configures the stdio server: the test binary
// itself, told by env to serve.
func StdioCommand() (command string, args []string, env []string) {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return exe, []string{"-test.run=^$"}, []string{ChildEnv + "=1"}
}

// NewHTTPServer serves a fresh test server over Streamable HTTP (the
// current, stateless protocol) until the test ends.
func NewHTTPServer(t testing.TB) *httptest.Server {
	s := NewServer()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true}))
	t.Cleanup(func() {
		srv.CloseClientConnections() // a client's subscriptions/listen request never ends by itself
		srv.Close()
	})
	return srv
}

type (
	textIn struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	sizeIn struct {
		Chars int `json:"chars" jsonschema:"how many characters to return"`
	}
	nameIn struct {
		Name string `json:"name" jsonschema:"the name of the tool to add"`
	}
	empty struct{}
)

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// NewServer returns the test server with its tools:
//   - echo {text}: "echo: <text>"
//   - pid: the serving process's id (a restarted stdio server has another)
//   - slow: never answers; returns when the call is cancelled
//   - fail: answers with a tool error
//   - crash: the process exits in the middle of the call
//   - big {chars}: that many characters
//   - add_tool {name}: adds a tool (an echo) named name, which makes the
//     server send tools/list_changed
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"}, &mcp.ServerOptions{HasTools: true})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "The server's process id."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return text(strconv.Itoa(os.Getpid())), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Never finishes."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fails."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("the tool failed on purpose")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Kills the server."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Returns many characters."},
		func(_ context.Context, _ *mcp.CallToolRequest, in sizeIn) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", in.Chars)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Adds an echo tool under a new name."},
		func(_ context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
			name := in.Name
			mcp.AddTool(s, &mcp.Tool{Name: name, Description: "An added echo."},
				func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
					return text(name + ": " + in.Text), nil, nil
				})
			return text("added " + name), nil, nil
		})
	return s
}
