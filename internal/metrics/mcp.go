package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// mcpMetrics count MCP tool calls both ways: calls clients make to
// chatpipe's /mcp, and calls chatpipe's agent makes to MCP servers.
type mcpMetrics struct {
	serverCalls    *prometheus.CounterVec
	serverDuration *prometheus.HistogramVec
	clientCalls    *prometheus.CounterVec
	clientDuration *prometheus.HistogramVec
}

func (m *Metrics) registerMCP() {
	m.mcp.serverCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatpipe_mcp_server_calls_total",
		Help: "MCP tool calls served at /mcp, by tool and outcome (ok, tool_error, error, canceled)."},
		[]string{"tool", "outcome"})
	m.mcp.serverDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "chatpipe_mcp_server_call_duration_seconds", Help: "Duration of MCP tool calls served at /mcp.",
		Buckets: latencyBuckets}, []string{"tool"})
	m.mcp.clientCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatpipe_mcp_client_calls_total",
		Help: "Calls of MCP servers' tools, by server, tool and outcome (ok, tool_error, failed, canceled)."},
		[]string{"server", "tool", "outcome"})
	m.mcp.clientDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "chatpipe_mcp_client_call_duration_seconds", Help: "Duration of calls of MCP servers' tools.",
		Buckets: latencyBuckets}, []string{"server"})
	m.reg.MustRegister(m.mcp.serverCalls, m.mcp.serverDuration, m.mcp.clientCalls, m.mcp.clientDuration)
}

// MCPServerCall records one tool call served at /mcp.
func (m *Metrics) MCPServerCall(tool, outcome string, d time.Duration) {
	m.mcp.serverCalls.WithLabelValues(tool, outcome).Inc()
	m.mcp.serverDuration.WithLabelValues(tool).Observe(d.Seconds())
}

// MCPClientCall records one call of an MCP server's tool. Tool names are
// bounded by the servers' allow-lists and lists, not by clients.
func (m *Metrics) MCPClientCall(server, tool, outcome string, d time.Duration) {
	m.mcp.clientCalls.WithLabelValues(server, tool, outcome).Inc()
	m.mcp.clientDuration.WithLabelValues(server).Observe(d.Seconds())
}
