// Package remotetool is the contract of the tools other servers offer (MCP
// servers configured under mcp.servers): internal/mcpclient implements it,
// the agent's tools resolve them through ChatManage.RemoteTools. It is a
// leaf (standard library and eino's schema only).
package remotetool

import (
	"context"
	"time"

	"github.com/cloudwego/eino/schema"
)

// Source resolves the tools other servers offer. They come and go while
// chatpipe runs — a server starts, dies, lists other tools — so a request
// resolves them when it starts instead of when its configuration was
// built.
type Source interface {
	// RemoteTool returns the tool tool of server as offered now; ok is
	// false when the server is not configured or does not offer it.
	RemoteTool(server, tool string) (Tool, bool)
	// RemoteToolsOf lists the tools server offers now, sorted by name.
	RemoteToolsOf(server string) []Tool
}

// Tool is one tool of another server.
type Tool interface {
	// Info describes the tool to the model; its Name is the one the
	// model calls (server__tool), its parameters the server's schema.
	Info() *schema.ToolInfo
	// Timeout bounds one call; RequireApproval asks the user first.
	Timeout() time.Duration
	RequireApproval() bool
	// Call runs the tool with the model's arguments (a JSON object) and
	// returns its text. Errors are written for the model and the user.
	Call(ctx context.Context, arguments string) (string, error)
}
