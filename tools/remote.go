package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/internal/remotetool"
)

// Remote tools are the tools of MCP servers (mcp.servers in config.yaml).
// A mode lists them as "<server>.<tool>", or "<server>.*" for every tool
// the server offers; since servers come, go and change their lists, the
// entry is resolved for each request (Set.Resolve) against the request's
// remotetool.Source.

// remoteRef is a mode's entry naming remote tools.
type remoteRef struct {
	server, tool string // tool "*" = every tool of the server
	// timeoutSet and approvalSet say whether the mode's entry set these;
	// otherwise the server's settings (mcp.servers) apply.
	timeoutSet, approvalSet bool
}

// remoteServerName is the server part of a remote entry.
var remoteServerName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,30}$`)

// SplitRemoteName splits "server.tool" into its parts; ok is false for a
// name with no dot (a registered tool's).
func SplitRemoteName(name string) (server, tool string, ok bool) {
	server, tool, ok = strings.Cut(name, ".")
	return server, tool, ok
}

// notModelChars are the characters OpenAI-compatible APIs refuse in a
// function name (they accept letters, digits, _ and -, up to 64).
var notModelChars = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// ModelName is the name the model calls server's tool by: server__tool,
// since OpenAI-compatible APIs refuse dots in function names. A name
// longer than 64 characters is cut and keeps a digest, so it stays unique.
func ModelName(server, tool string) string {
	name := server + "__" + notModelChars.ReplaceAllString(tool, "_")
	if len(name) <= 64 {
		return name
	}
	sum := sha256.Sum256([]byte(server + "." + tool))
	return name[:55] + "_" + hex.EncodeToString(sum[:4])
}

// buildRemote builds a mode's entry of remote tools.
func buildRemote(name, key string, common Common, commonRaw map[string]any, own map[string]any) (*Configured, error) {
	server, tool, _ := SplitRemoteName(name)
	if !remoteServerName.MatchString(server) || tool == "" {
		return nil, fmt.Errorf("%s: want <mcp server>.<tool> or <mcp server>.*, got %q", key, name)
	}
	if len(own) > 0 {
		return nil, fmt.Errorf("%s: an MCP tool takes only timeout, require_approval and description", key)
	}
	ref := &remoteRef{server: server, tool: tool}
	for k := range commonRaw {
		switch strings.ToLower(k) {
		case "timeout":
			ref.timeoutSet = true
		case "require_approval":
			ref.approvalSet = true
		}
	}
	info := &schema.ToolInfo{Name: ModelName(server, tool), Desc: common.Description}
	return &Configured{Tool: unresolved{name}, Info: info, Timeout: common.Timeout,
		RequireApproval: common.RequireApproval, remote: ref}, nil
}

// RemoteServers lists the MCP servers the set's entries name, with the
// tool each entry names ("*" for all), as "server.tool".
func (s *Set) RemoteServers() []string {
	var out []string
	for _, c := range s.list {
		if c.remote != nil {
			out = append(out, c.remote.server+"."+c.remote.tool)
		}
	}
	return out
}

// Resolve returns the tools a request offers: the set with each remote
// entry replaced by the tools its server offers now (none when the server
// is down or not configured). A set without remote entries is returned as
// it is.
func (s *Set) Resolve(rt remotetool.Source) *Set {
	hasRemote := false
	for _, c := range s.list {
		hasRemote = hasRemote || c.remote != nil
	}
	if !hasRemote {
		return s
	}
	out := &Set{list: make([]*Configured, 0, len(s.list))}
	for _, c := range s.list {
		if c.remote == nil {
			out.list = append(out.list, c)
			continue
		}
		if rt == nil {
			continue
		}
		var found []remotetool.Tool
		if c.remote.tool == "*" {
			found = rt.RemoteToolsOf(c.remote.server)
		} else if t, ok := rt.RemoteTool(c.remote.server, c.remote.tool); ok {
			found = []remotetool.Tool{t}
		}
		for _, t := range found {
			r := remoteTool{t}
			info := *t.Info()
			if c.Info.Desc != "" && c.remote.tool != "*" {
				info.Desc = c.Info.Desc
			}
			if _, dup := out.Lookup(info.Name); dup {
				continue // listed by name and by "*"
			}
			rc := &Configured{Tool: r, Info: &info, Timeout: t.Timeout(), RequireApproval: t.RequireApproval()}
			if c.remote.timeoutSet {
				rc.Timeout = c.Timeout
			}
			if c.remote.approvalSet {
				rc.RequireApproval = c.RequireApproval
			} else {
				rc.RequireApproval = rc.RequireApproval || c.RequireApproval
			}
			if rc.Timeout <= 0 {
				rc.Timeout = c.Timeout
			}
			out.list = append(out.list, rc)
		}
	}
	return out
}

// remoteTool adapts a remotetool.Tool to Tool.
type remoteTool struct{ t remotetool.Tool }

func (r remoteTool) Info() *schema.ToolInfo { return r.t.Info() }

func (r remoteTool) Run(ctx context.Context, _ *Env, arguments string) (string, error) {
	return r.t.Call(ctx, arguments)
}

// unresolved stands for a remote entry before Resolve; it is never
// offered, so a call reaching it is a bug reported as a failed call.
type unresolved struct{ name string }

func (u unresolved) Info() *schema.ToolInfo { return &schema.ToolInfo{Name: u.name} }

func (u unresolved) Run(context.Context, *Env, string) (string, error) {
	return "", errors.New("the MCP tool " + u.name + " is not available")
}
