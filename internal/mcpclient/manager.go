// Package mcpclient connects chatpipe to the MCP servers configured under
// mcp.servers and offers their tools to the agent modes (as
// remotetool.Source). One Manager owns every connection: it starts
// them, restarts a stdio server that dies (with backoff), re-lists a
// server's tools when it says they changed, applies a new configuration
// to new requests (hot reload) and closes everything on shutdown.
//
// It is built on the official Go SDK (github.com/modelcontextprotocol/go-sdk):
// the protocol, both transports and the version negotiation are the SDK's.
package mcpclient

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/internal/remotetool"
)

// Observer is told about every tool call (metrics).
type Observer interface {
	MCPClientCall(server, tool, outcome string, d time.Duration)
}

// Call outcomes, as logged and counted.
const (
	OutcomeOK        = "ok"         // the tool answered
	OutcomeToolError = "tool_error" // the tool answered with an error
	OutcomeFailed    = "failed"     // the call failed: refused, the server died or is down
	OutcomeCanceled  = "canceled"   // the caller gave up: timeout or stop
)

// Options configure a Manager.
type Options struct {
	Logger   *zap.Logger
	Observer Observer // nil = none
	// MinBackoff and MaxBackoff bound the wait before reconnecting to a
	// server that failed (doubling from min to max); 0 = 200ms and 30s.
	MinBackoff, MaxBackoff time.Duration
}

// Manager holds the connections to the configured MCP servers. It is safe
// for concurrent use.
type Manager struct {
	opts Options
	log  *zap.Logger

	mu     sync.Mutex
	links  map[string]*link
	closed bool
}

var _ remotetool.Source = (*Manager)(nil)

// New returns a manager with no servers; Apply adds them.
func New(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 200 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(30*time.Second, opts.MinBackoff)
	}
	return &Manager{opts: opts, log: opts.Logger.Named("mcp"), links: map[string]*link{}}
}

// Apply makes the connections match servers (a validated mcp.servers):
// new servers are connected, removed ones closed, changed ones replaced;
// unchanged ones keep their connection. It returns at once — connecting
// happens in the background — except for closing removed servers.
func (m *Manager) Apply(servers []Server) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	want := make(map[string]Server, len(servers))
	for _, s := range servers {
		want[s.Name] = s.withDefaults()
	}
	var stale []*link
	for name, l := range m.links {
		if cfg, ok := want[name]; !ok || !reflect.DeepEqual(cfg, l.cfg) {
			stale = append(stale, l)
			delete(m.links, name)
		}
	}
	for name, cfg := range want {
		if _, ok := m.links[name]; !ok {
			m.links[name] = startLink(cfg, m.opts, m.log.With(zap.String("server", name)))
		}
	}
	m.mu.Unlock()
	for _, l := range stale {
		l.stop()
	}
}

// Close disconnects every server and waits for their goroutines (and
// stdio processes) to end.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	links := m.links
	m.links = map[string]*link{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range links {
		wg.Go(l.stop)
	}
	wg.Wait()
}

func (m *Manager) link(server string) *link {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.links[server]
}

// RemoteTool implements remotetool.Source.
func (m *Manager) RemoteTool(server, tool string) (remotetool.Tool, bool) {
	l := m.link(server)
	if l == nil {
		return nil, false
	}
	t, ok := l.tool(tool)
	if !ok {
		return nil, false
	}
	return t, true
}

// RemoteToolsOf implements remotetool.Source.
func (m *Manager) RemoteToolsOf(server string) []remotetool.Tool {
	l := m.link(server)
	if l == nil {
		return nil
	}
	list := l.toolList()
	out := make([]remotetool.Tool, len(list))
	for i, t := range list {
		out[i] = t
	}
	return out
}

// Status is what a server looks like now, for logs and tests.
type Status struct {
	Connected bool
	Tools     []string // the allowed tools it lists, sorted
	Restarts  int      // connections made after the first
}

// Status reports on server; ok is false when it is not configured.
func (m *Manager) Status(server string) (Status, bool) {
	l := m.link(server)
	if l == nil {
		return Status{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := Status{Connected: l.session != nil, Restarts: max(l.connects-1, 0)}
	for name := range l.tools {
		st.Tools = append(st.Tools, name)
	}
	sort.Strings(st.Tools)
	return st, true
}

// WaitConnected waits until server has a live session (its tools listed)
// or ctx ends.
func (m *Manager) WaitConnected(ctx context.Context, server string) error {
	l := m.link(server)
	if l == nil {
		return fmt.Errorf("no MCP server %q is configured", server)
	}
	_, err := l.current(ctx)
	return err
}
