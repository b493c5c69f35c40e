package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// MCP configures the Model Context Protocol both ways: chatpipe's knowledge
// base served to assistants at /mcp, and other MCP servers whose tools
// chatpipe's agent modes may call.
type MCP struct {
	Server  MCPServer       `mapstructure:"server"`
	Servers []MCPServerLink `mapstructure:"servers"`
}

// MCPServer is chatpipe's own MCP endpoint (/mcp, Streamable HTTP), with the
// HTTP API's keys and tenants.
type MCPServer struct {
	Enabled bool `mapstructure:"enabled"` // serve /mcp
	// ReadOnly offers only what reads the knowledge base (knowledge_search,
	// fetch_document, the document resources): no ask, so an MCP client
	// can neither start answers (model cost) nor add to the history.
	ReadOnly bool `mapstructure:"read_only"`
	// MaxResultChars bounds the text of one tool result (fetch_document's
	// page size at most, knowledge_search's passages).
	MaxResultChars int `mapstructure:"max_result_chars"`
}

// MCPServerLink is one MCP server whose tools chatpipe may call, named in
// a mode's tool list as "<name>.<tool>" (or "<name>.*" for every tool it
// offers and the allow-list lets through).
type MCPServerLink struct {
	Name      string            `mapstructure:"name"`      // letters, digits, _ and -; the prefix of its tools
	Transport string            `mapstructure:"transport"` // stdio | http
	Command   string            `mapstructure:"command"`   // stdio: the program to start
	Args      []string          `mapstructure:"args"`      // stdio: its arguments
	Env       []string          `mapstructure:"env"`       // stdio: extra environment variables as KEY=value (a list: YAML keys lose their case)
	URL       string            `mapstructure:"url"`       // http: the Streamable HTTP endpoint
	Headers   map[string]string `mapstructure:"headers"`   // http: extra request headers (e.g. Authorization)
	// Tools is the allow-list of the server's tools chatpipe may use; empty
	// allows every tool the server lists.
	Tools []string `mapstructure:"tools"`
	// RequireApproval lists tools whose every call waits for the user's
	// approval ("*" = all of them).
	RequireApproval []string `mapstructure:"require_approval"`
	// Timeout bounds one tool call; ToolTimeouts override it per tool (tool
	// names matched without regard to case, as config keys are).
	Timeout      time.Duration            `mapstructure:"timeout"`
	ToolTimeouts map[string]time.Duration `mapstructure:"tool_timeouts"`
	// ConnectTimeout bounds starting or connecting to the server.
	ConnectTimeout time.Duration `mapstructure:"connect_timeout"`
	// MaxResultChars bounds a tool result's text as read from the server.
	MaxResultChars int `mapstructure:"max_result_chars"`
}

// MCP transports of mcp.servers.
const (
	MCPTransportStdio = "stdio"
	MCPTransportHTTP  = "http"
)

// mcpServerName is a server name: it prefixes tool names the model sees,
// whose alphabet is letters, digits, _ and -; "__" separates the parts.
var mcpServerName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,30}$`)

// Allows reports whether the allow-list lets tool through.
func (s MCPServerLink) Allows(tool string) bool {
	return len(s.Tools) == 0 || slices.Contains(s.Tools, tool)
}

// MCPLink returns the mcp.servers entry called name.
func (c *Config) MCPLink(name string) (MCPServerLink, bool) {
	for _, s := range c.MCP.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return MCPServerLink{}, false
}

// validateMCP checks the mcp section.
func (c *Config) validateMCP(add func(key, format string, args ...any)) {
	if c.MCP.Server.MaxResultChars < 1000 {
		add("mcp.server.max_result_chars", "must be at least 1000, got %d", c.MCP.Server.MaxResultChars)
	}
	seen := map[string]bool{}
	for i, s := range c.MCP.Servers {
		key := fmt.Sprintf("mcp.servers[%d]", i)
		if !mcpServerName.MatchString(s.Name) {
			add(key+".name", "%q must be 1-31 lower-case letters, digits and - (it prefixes the server's tool names)", s.Name)
		} else if seen[s.Name] {
			add(key+".name", "%q is used by another server", s.Name)
		}
		seen[s.Name] = true
		switch s.Transport {
		case MCPTransportStdio:
			if strings.TrimSpace(s.Command) == "" {
				add(key+".command", "required for transport stdio")
			}
			for j, kv := range s.Env {
				if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
					add(fmt.Sprintf("%s.env[%d]", key, j), "want KEY=value, got %q", kv)
				}
			}
		case MCPTransportHTTP:
			if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
				add(key+".url", "required for transport http: an http:// or https:// URL, got %q", s.URL)
			}
		default:
			add(key+".transport", "%q is not supported (accepted: stdio, http)", s.Transport)
		}
		for _, d := range []struct {
			k string
			v time.Duration
		}{{"timeout", s.Timeout}, {"connect_timeout", s.ConnectTimeout}} {
			if d.v < 0 {
				add(key+"."+d.k, "must not be negative, got %v", d.v)
			}
		}
		for tool, d := range s.ToolTimeouts {
			if d <= 0 {
				add(key+".tool_timeouts."+tool, "must be a positive duration, got %v", d)
			}
		}
		if s.MaxResultChars < 0 {
			add(key+".max_result_chars", "must not be negative, got %d", s.MaxResultChars)
		}
	}
}
