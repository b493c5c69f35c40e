package mcpclient

import (
	"slices"
	"strings"
	"time"
)

// Transports of a Server.
const (
	TransportStdio = "stdio" // a child process speaking MCP on stdin and stdout
	TransportHTTP  = "http"  // a Streamable HTTP endpoint
)

// Defaults of a Server that leaves its bounds unset.
const (
	DefaultCallTimeout    = 30 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	DefaultResultChars    = 100000
)

// Server is one MCP server whose tools the agent may call (an entry of
// mcp.servers), named in a mode's tool list as "<Name>.<tool>".
type Server struct {
	Name      string            // prefixes its tools' names
	Transport string            // TransportStdio | TransportHTTP
	Command   string            // stdio: the program to start
	Args      []string          // stdio: its arguments
	Env       []string          // stdio: extra environment variables as KEY=value
	URL       string            // http: the Streamable HTTP endpoint
	Headers   map[string]string // http: extra request headers
	// Tools is the allow-list of the server's tools; empty allows all.
	Tools []string
	// RequireApproval lists tools whose every call waits for the user's
	// approval ("*" = all of them).
	RequireApproval []string
	// Timeout bounds one tool call (0 = DefaultCallTimeout); ToolTimeouts
	// override it per tool, names matched without regard to case.
	Timeout      time.Duration
	ToolTimeouts map[string]time.Duration
	// ConnectTimeout bounds starting or connecting to the server;
	// 0 = DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// MaxResultChars bounds a tool result's text as read from the server;
	// 0 = DefaultResultChars.
	MaxResultChars int
}

// withDefaults returns s with unset bounds filled in.
func (s Server) withDefaults() Server {
	if s.Timeout == 0 {
		s.Timeout = DefaultCallTimeout
	}
	if s.ConnectTimeout == 0 {
		s.ConnectTimeout = DefaultConnectTimeout
	}
	if s.MaxResultChars == 0 {
		s.MaxResultChars = DefaultResultChars
	}
	return s
}

// allows reports whether the allow-list lets tool through.
func (s Server) allows(tool string) bool {
	return len(s.Tools) == 0 || slices.Contains(s.Tools, tool)
}

// needsApproval reports whether calls of tool wait for the user.
func (s Server) needsApproval(tool string) bool {
	return slices.Contains(s.RequireApproval, "*") || slices.Contains(s.RequireApproval, tool)
}

// callTimeout is the bound of one call of tool.
func (s Server) callTimeout(tool string) time.Duration {
	for name, d := range s.ToolTimeouts {
		if strings.EqualFold(name, tool) && d > 0 {
			return d
		}
	}
	return s.withDefaults().Timeout
}
