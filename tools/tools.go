// Package tools holds the functions an agent's model may call. A tool
// registers itself by name, as a plugin does (tools.Register in init), is
// described to the model by a JSON schema, and is enabled per chat mode in
// config.yaml: agent_loop's `tools` list names the tools a mode offers,
// each with its own settings.
//
// The built-in tools reuse the pipeline rather than reimplementing it:
// knowledge_search runs the configured search → rerank → merge plugins,
// fetch_document reads a document through the request's knowledge base.
package tools

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/registry"
	"github.com/chatpipe/chatpipe/pipeline"
)

// Tool is a function the model may call. Tools are shared by every request
// of a configuration snapshot and called concurrently, so Run keeps its
// state in its arguments.
type Tool interface {
	// Info describes the tool to the model: its name (the registered
	// one), what it does and the JSON schema of its arguments.
	Info() *schema.ToolInfo
	// Run executes one call with the model's arguments (a JSON object)
	// and returns the text the model reads. An error becomes a failed
	// tool_result the model sees, so its message is written for the model
	// and the user and never carries a secret. Run must return soon after
	// ctx ends: that is how the per-tool timeout and stop reach it.
	Run(ctx context.Context, env *Env, arguments string) (string, error)
}

// Env is what one tool call may use.
type Env struct {
	// Request is a copy of the request the agent answers: its tenant,
	// question and services. Tools read it; its Emitter discards events,
	// since the agent loop reports what tools do.
	Request *pipeline.ChatManage
	// References collects the passages tools found during the run,
	// numbered for citation across calls. Safe for concurrent use.
	References *References
	// CallID is the model's id of this tool call.
	CallID string
	// output streams a fragment of the call's output; nil = nowhere.
	output func(text string)
}

// Output streams a fragment of the call's output to the user as the tool
// produces it (tool_call.output.delta). The tool still returns its whole
// output, which is what the model reads and tool_result carries. Safe
// for concurrent use; a no-op where nothing streams.
func (e *Env) Output(text string) {
	if e.output != nil && text != "" {
		e.output(text)
	}
}

// StreamOutput sets where Output sends the call's output fragments.
func (e *Env) StreamOutput(emit func(text string)) { e.output = emit }

// NewEnv returns the environment of one call of a tool for the request cm
// (copied, so that calls running concurrently never share its state).
func NewEnv(cm *pipeline.ChatManage, refs *References, callID string) *Env {
	req := *cm
	req.Emitter = eventbus.EmitterFunc(func(eventbus.Event) {})
	req.History = append([]conversation.Message(nil), cm.History...)
	req.References = append([]eventbus.Reference(nil), cm.References...)
	return &Env{Request: &req, References: refs, CallID: callID}
}

// Factory builds a tool from its settings.
type Factory func(cfg Config) (Tool, error)

// Config is a tool's settings for one chat mode: what agent_loop's tools
// list gives the tool, with the settings every tool has (timeout,
// require_approval, description) already taken out.
type Config struct {
	Name string         // the tool's registered name
	Mode string         // the chat mode it is built for
	Key  string         // the config key, for error messages
	Raw  map[string]any // the tool's own settings
	// Sections are the global plugin sections, for tools that run
	// plugins (knowledge_search builds its sub-chain from them).
	Sections map[string]map[string]any
}

// Decode fills into (a pointer to the tool's config struct, defaults
// already set) from the settings; unknown keys are an error naming them.
func (c Config) Decode(into any) error { return pipeline.DecodeSection(c.Key, c.Raw, into) }

// factories build the tools, by the name agent_loop's tools list uses.
var factories = registry.New[Factory]("tool")

// validName is what OpenAI-compatible APIs accept as a function name.
var validName = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// Register makes a tool available under name (lower case, letters,
// digits, _ and -); call it from an init function. An invalid or repeated
// name panics, as it is a programming error.
func Register(name string, f Factory) {
	if !validName.MatchString(name) {
		panic("tools: invalid tool name " + name)
	}
	factories.Register(name, f)
}

// Registered lists the registered tool names, sorted.
func Registered() []string { return factories.Names() }

// Configured is a tool as a mode offers it.
type Configured struct {
	Tool Tool
	Info *schema.ToolInfo // Tool.Info(), with the configured description
	// Timeout bounds one call; past it the call fails and the model is
	// told so.
	Timeout time.Duration
	// RequireApproval makes each call wait for the user to allow it.
	RequireApproval bool

	remote *remoteRef // set for an entry naming MCP tools, until Resolve
}

// Name is the tool's name.
func (c *Configured) Name() string { return c.Info.Name }

// Common are the settings every tool has, and their defaults.
type Common struct {
	Timeout         time.Duration `mapstructure:"timeout"`          // bound of one call
	RequireApproval bool          `mapstructure:"require_approval"` // ask the user before each call
	// Description replaces the tool's own description for the model, to
	// say what this deployment's knowledge base holds ("" = the tool's).
	Description string `mapstructure:"description"`
}

// Set is the tools one mode offers, in the configured order.
type Set struct {
	list []*Configured
}

// Build builds the tools a mode offers from its list: each entry a tool
// name or {name: {settings}}. defaults are the common settings of tools
// that do not set them. Errors name key (e.g. plugins.agent_loop.tools).
func Build(key, mode string, entries []any, defaults Common, sections map[string]map[string]any) (*Set, error) {
	set := &Set{}
	for i, item := range entries {
		name, raw, err := parseEntry(item)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		entryKey := fmt.Sprintf("%s[%d] (%s)", key, i, name)
		if _, dup := set.Lookup(name); dup {
			return nil, fmt.Errorf("%s: tool listed twice", entryKey)
		}
		c, err := build(name, mode, entryKey, raw, defaults, sections)
		if err != nil {
			return nil, err
		}
		set.list = append(set.list, c)
	}
	return set, nil
}

func build(name, mode, key string, raw map[string]any, defaults Common, sections map[string]map[string]any) (*Configured, error) {
	common, own := defaults, map[string]any{}
	commonRaw := map[string]any{}
	for k, v := range raw {
		switch strings.ToLower(k) {
		case "timeout", "require_approval", "description":
			commonRaw[k] = v
		default:
			own[k] = v
		}
	}
	if err := (Config{Key: key, Raw: commonRaw}).Decode(&common); err != nil {
		return nil, err
	}
	if common.Timeout <= 0 {
		return nil, fmt.Errorf("%s.timeout: must be positive", key)
	}
	if _, _, remote := SplitRemoteName(name); remote {
		return buildRemote(name, key, common, commonRaw, own)
	}
	f, err := factories.Get(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	t, err := f(Config{Name: name, Mode: mode, Key: key, Raw: own, Sections: sections})
	if err != nil {
		// A KeyError names its own key: an error in a section the tool
		// only uses (plugins.rerank, through knowledge_search's chain) is
		// reported at that section, not through this tool.
		return nil, pipeline.WithKey(key, err)
	}
	info := *t.Info()
	if info.Name != name {
		return nil, fmt.Errorf("%s: the tool calls itself %q, not %q", key, info.Name, name)
	}
	if common.Description != "" {
		info.Desc = common.Description
	}
	return &Configured{Tool: t, Info: &info, Timeout: common.Timeout, RequireApproval: common.RequireApproval}, nil
}

// parseEntry reads `name` or `{name: {settings}}`, as a mode's plugin
// list is written.
func parseEntry(item any) (string, map[string]any, error) {
	const shape = "want a tool name or {name: {settings}}"
	switch v := item.(type) {
	case string:
		if name := normalizeName(v); name != "" {
			return name, nil, nil
		}
		return "", nil, fmt.Errorf("empty tool name")
	case map[string]any:
		if len(v) != 1 {
			return "", nil, fmt.Errorf("%s, got a mapping with %d keys", shape, len(v))
		}
		for name, settings := range v {
			name = normalizeName(name)
			if name == "" {
				return "", nil, fmt.Errorf("empty tool name")
			}
			switch s := settings.(type) {
			case nil:
				return name, nil, nil
			case map[string]any:
				return name, maps.Clone(s), nil
			default:
				return "", nil, fmt.Errorf("%s, got %T for %s's settings", shape, settings, name)
			}
		}
	}
	return "", nil, fmt.Errorf("%s, got %T", shape, item)
}

// normalizeName lower-cases a tool's name, except the tool part of an MCP
// tool's "server.tool" (MCP tool names are case-sensitive).
func normalizeName(name string) string {
	name = strings.TrimSpace(name)
	if server, tool, ok := SplitRemoteName(name); ok {
		return strings.ToLower(server) + "." + tool
	}
	return strings.ToLower(name)
}

// Len is the number of tools.
func (s *Set) Len() int { return len(s.list) }

// Tools lists the tools in order.
func (s *Set) Tools() []*Configured { return s.list }

// Lookup finds a tool by name: the name the model calls it by, or for an
// MCP tool also its "server.tool".
func (s *Set) Lookup(name string) (*Configured, bool) {
	if server, tool, ok := SplitRemoteName(name); ok {
		name = ModelName(server, tool)
	}
	for _, c := range s.list {
		if c.Name() == name {
			return c, true
		}
	}
	return nil, false
}

// Infos describes the tools to the model, in order.
func (s *Set) Infos() []*schema.ToolInfo {
	out := make([]*schema.ToolInfo, len(s.list))
	for i, c := range s.list {
		out[i] = c.Info
	}
	return out
}
