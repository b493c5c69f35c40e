package app

import (
	"fmt"
	"net/http"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/mcpclient"
	"github.com/chatpipe/chatpipe/internal/mcpserver"
	"github.com/chatpipe/chatpipe/internal/metrics"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/tools"
)

// newMCPClients is the manager of the connections to mcp.servers.
func newMCPClients(log *zap.Logger, m *metrics.Metrics) *mcpclient.Manager {
	opts := mcpclient.Options{Logger: log}
	if m != nil {
		opts.Observer = m
	}
	return mcpclient.New(opts)
}

// newMCPServer is the /mcp endpoint (mcp.server.enabled is read per
// request, so a reload turns it on and off).
func (a *App) newMCPServer() http.Handler {
	opts := mcpserver.Options{Settings: mcpServerSettings(a.cfg.Load), Setup: a.setup.Load, Knowledge: a.knowledge,
		Runs: a.runs, Streams: a.streams, Logger: a.log}
	if a.metrics != nil {
		opts.Observer = a.metrics
	}
	return mcpserver.New(opts)
}

// remoteToolUser is implemented by plugins that offer MCP servers' tools
// (agent_loop), so a tool of a server that is not configured, or not on
// its allow-list, is caught when the config loads.
type remoteToolUser interface{ RemoteTools() []string }

func checkRemoteTools(cfg *config.Config, mode string, chain *pipeline.EventManager) error {
	for _, p := range chain.PluginInstances() {
		ru, ok := p.(remoteToolUser)
		if !ok {
			continue
		}
		for _, name := range ru.RemoteTools() {
			server, tool, _ := tools.SplitRemoteName(name)
			link, ok := cfg.MCPLink(server)
			switch {
			case !ok:
				return fmt.Errorf("pipelines.%s: plugin %s offers %s, but no MCP server %q is defined under mcp.servers",
					mode, p.Name(), name, server)
			case tool != "*" && !link.Allows(tool):
				return fmt.Errorf("pipelines.%s: plugin %s offers %s, which mcp.servers (%s).tools does not allow",
					mode, p.Name(), name, server)
			}
		}
	}
	return nil
}

// MCPClients is the manager of the connections to mcp.servers.
func (a *App) MCPClients() *mcpclient.Manager { return a.mcpClients }
