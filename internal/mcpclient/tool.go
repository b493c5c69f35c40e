package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cloudwego/eino/schema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/internal/remotetool"
	"github.com/chatpipe/chatpipe/tools"
)

// remoteTool is one allowed tool of a connected server.
type remoteTool struct {
	link     *link
	name     string // the server's name for it
	info     *schema.ToolInfo
	timeout  time.Duration
	approval bool
}

var _ remotetool.Tool = (*remoteTool)(nil)

func (t *remoteTool) Info() *schema.ToolInfo { return t.info }
func (t *remoteTool) Timeout() time.Duration { return t.timeout }
func (t *remoteTool) RequireApproval() bool  { return t.approval }

// Call implements remotetool.Tool: one tools/call on the server's
// current session. Every way it can go wrong — the server is down, dies
// during the call, refuses the arguments, answers with an error, takes
// too long — ends as an error for the model; none leaves the caller
// waiting past ctx.
func (t *remoteTool) Call(ctx context.Context, arguments string) (string, error) {
	start := time.Now()
	out, outcome, err := t.call(ctx, arguments)
	d := time.Since(start)
	l := t.link
	if l.opts.Observer != nil {
		l.opts.Observer.MCPClientCall(l.cfg.Name, t.name, outcome, d)
	}
	fields := []zap.Field{zap.String("tool", t.name), zap.String("outcome", outcome), zap.Duration("duration", d)}
	if err != nil {
		fields = append(fields, zap.Error(err))
	}
	l.log.Info("MCP tool call", fields...)
	return out, err
}

func (t *remoteTool) call(ctx context.Context, arguments string) (string, string, error) {
	args := json.RawMessage(strings.TrimSpace(arguments))
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil {
		return "", OutcomeFailed, errors.New("the arguments must be a JSON object")
	}
	sess, err := t.link.current(ctx)
	if err != nil {
		return "", outcomeOf(ctx), err
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: t.name, Arguments: args})
	switch {
	case ctx.Err() != nil:
		return "", OutcomeCanceled, ctx.Err()
	case err != nil:
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) {
			return "", OutcomeFailed, fmt.Errorf("the MCP server %s refused the call: %s", t.link.cfg.Name, rpc.Message)
		}
		t.link.drop(sess) // the connection is broken: the next call waits for a new one
		return "", OutcomeFailed, fmt.Errorf("the MCP server %s failed during the call (it is being reconnected); try again", t.link.cfg.Name)
	}
	text := tools.Truncate(resultText(res), t.link.cfg.MaxResultChars)
	if res.IsError {
		if text == "" {
			text = "the tool failed without saying why"
		}
		return "", OutcomeToolError, errors.New(text)
	}
	return text, OutcomeOK, nil
}

func outcomeOf(ctx context.Context) string {
	if ctx.Err() != nil {
		return OutcomeCanceled
	}
	return OutcomeFailed
}

// resultText is what the model reads of a result: its text blocks, a
// note for each block of another kind, or the structured content as JSON
// when there is no text.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(&b, "[an image (%s, %d bytes) is not shown]", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(&b, "[audio (%s, %d bytes) is not shown]", c.MIMEType, len(c.Data))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				b.WriteString(c.Resource.Text)
			} else if c.Resource != nil {
				fmt.Fprintf(&b, "[resource %s is not text]", c.Resource.URI)
			}
		case *mcp.ResourceLink:
			fmt.Fprintf(&b, "[resource %s]", c.URI)
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			b.Write(raw)
		}
	}
	return b.String()
}
