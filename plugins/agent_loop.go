package plugins

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/chatmodel"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/tools"
)

func init() { pipeline.Register("agent_loop", newAgentLoop) }

// AgentLoopConfig is the `plugins.agent_loop` section.
type AgentLoopConfig struct {
	Model        string `mapstructure:"model"`         // a name under models:
	ThinkTags    bool   `mapstructure:"think_tags"`    // wrap thinking deltas in <think>…</think>
	SystemPrompt string `mapstructure:"system_prompt"` // sent first; empty = none
	// MaxCycles bounds the model calls of one answer. The last call is
	// offered no tools, so the loop always ends with an answer.
	MaxCycles int `mapstructure:"max_cycles"`
	// ForceTool, when set, makes the first call require this tool.
	ForceTool string `mapstructure:"force_tool"`
	// ToolTimeout bounds a tool call, for tools that set no timeout.
	ToolTimeout time.Duration `mapstructure:"tool_timeout"`
	// ApprovalTimeout is how long a call of a tool marked require_approval
	// waits for the user; unanswered, it is denied.
	ApprovalTimeout time.Duration `mapstructure:"approval_timeout"`
	// MaxResultChars bounds a tool's output as the model reads it.
	MaxResultChars int `mapstructure:"max_result_chars"`
	// MaxToolContext bounds the tool output one model call reads: past it,
	// the oldest results are replaced by a stub first (the last cycle's
	// stay whole). 0 = no bound.
	MaxToolContext int `mapstructure:"max_tool_context"`
	// Reminder ends the prompt of every model call after tools ran, so
	// the model keeps the task in view ({question} = the question; "" =
	// none).
	Reminder string `mapstructure:"reminder"`
	// TextToolCalls looks for a tool call written as JSON text by models
	// that do not use the tool-call field, once per cycle.
	TextToolCalls bool `mapstructure:"text_tool_calls"`
	// Tools are the tools offered, in order: names or {name: {settings}}.
	Tools []any `mapstructure:"tools"`
}

// DefaultAgentTools are the tools agent_loop offers when its section
// names none.
var DefaultAgentTools = []any{"knowledge_search", "fetch_document"}

// AgentLoop answers by letting the model call tools: each cycle streams
// the model's thinking, text and tool calls, runs the called tools
// concurrently — each starting as soon as its arguments are complete,
// while the model may still be streaming (approval asked at that moment
// when the tool needs one) — streams their results in completion order
// and sends them back to the model in call order, and asks again — until the model answers
// without tools or max_cycles is reached, whose call is offered no tools.
// Convergence is by construction, as in Onyx's loop: force_tool makes the
// first cycle require a tool, the last can only answer.
//
// Every event of a cycle carries placement.turn (the cycle, from 1); a
// tool call's events (tool_call.*, approvals, references it found,
// tool_result) also carry placement.tab, the call's position in its cycle
// from 1. One usage event, the total of every call, ends the loop.
type AgentLoop struct {
	cfg   AgentLoopConfig
	gen   *ChatCompletionStream // streams one model call, with the think and citation handling of the chat mode
	tools *tools.Set
}

func newAgentLoop(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := AgentLoopConfig{Model: "default", ThinkTags: true, SystemPrompt: config.DefaultAgentPrompt,
		MaxCycles: 6, ToolTimeout: 30 * time.Second, ApprovalTimeout: 5 * time.Minute,
		MaxResultChars: 20000, MaxToolContext: 60000, Reminder: config.DefaultAgentReminder, TextToolCalls: true}
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	if _, set := c.Raw["tools"]; !set {
		cfg.Tools = DefaultAgentTools
	}
	switch {
	case cfg.MaxCycles < 1 || cfg.MaxCycles > 50:
		return nil, fmt.Errorf("%s.max_cycles: must be between 1 and 50", c.Key)
	case cfg.ToolTimeout <= 0:
		return nil, fmt.Errorf("%s.tool_timeout: must be positive", c.Key)
	case cfg.ApprovalTimeout <= 0:
		return nil, fmt.Errorf("%s.approval_timeout: must be positive", c.Key)
	case cfg.MaxResultChars < 200:
		return nil, fmt.Errorf("%s.max_result_chars: must be at least 200", c.Key)
	case cfg.MaxToolContext < 0:
		return nil, fmt.Errorf("%s.max_tool_context: must not be negative (0 = no bound)", c.Key)
	}
	set, err := tools.Build(c.Key+".tools", c.Mode, cfg.Tools, tools.Common{Timeout: cfg.ToolTimeout}, c.Sections)
	if err != nil {
		return nil, err
	}
	cfg.ForceTool = strings.TrimSpace(cfg.ForceTool)
	if cfg.ForceTool != "" {
		if _, ok := set.Lookup(cfg.ForceTool); !ok {
			return nil, fmt.Errorf("%s.force_tool: %q is not among the tools offered (%s)", c.Key, cfg.ForceTool, toolNames(set))
		}
		if cfg.MaxCycles < 2 {
			return nil, fmt.Errorf("%s.force_tool: needs max_cycles of at least 2 (the last cycle is offered no tools)", c.Key)
		}
	}
	gen := &ChatCompletionStream{cfg: ChatCompletionConfig{Model: cfg.Model, ThinkTags: cfg.ThinkTags,
		SystemPrompt: cfg.SystemPrompt, RAGPrompt: config.DefaultRAGPrompt}}
	return &AgentLoop{cfg: cfg, gen: gen, tools: set}, nil
}

// Name implements pipeline.Plugin.
func (p *AgentLoop) Name() string { return "agent_loop" }

// Events implements pipeline.Plugin.
func (p *AgentLoop) Events() []pipeline.EventType {
	return []pipeline.EventType{pipeline.StageGenerate}
}

// RemoteTools lists the MCP tools the plugin's tools name, as
// "server.tool" ("server.*" for all), so the app can check the servers
// are configured.
func (p *AgentLoop) RemoteTools() []string { return p.tools.RemoteServers() }

// ModelName is the model entry the plugin asks.
func (p *AgentLoop) ModelName() string { return p.cfg.Model }

// OnEvent implements pipeline.Plugin.
func (p *AgentLoop) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	name := cmp.Or(cm.Model, p.cfg.Model)
	m, err := cm.Models.ChatModel(name)
	if err != nil {
		return pipeline.Errorf(pipeline.CodeNotConfigured, err,
			"The chat model %q is not configured; check config.yaml.", name)
	}
	cm.AnswerModel = name
	r := &agentRun{p: p, cm: cm, model: m, out: cm.Emitter, refs: tools.NewReferences(cm.References), start: time.Now(),
		tools: p.tools.Resolve(cm.RemoteTools)} // MCP servers' tools as offered now
	defer r.stragglers.Wait() // a tool that ignored its deadline still belongs to this run
	defer func() { cm.Emitter = r.out }()
	if perr := r.loop(ctx); perr != nil {
		return perr
	}
	return next()
}

// agentRun is the state of one answer of the agent loop. Its fields are
// used by the loop's goroutine only, except where noted.
type agentRun struct {
	p     *AgentLoop
	tools *tools.Set // the mode's tools with MCP tools resolved for this request
	cm    *pipeline.ChatManage
	model *chatmodel.Model
	out   eventbus.Emitter // the request's emitter (safe for concurrent use)
	refs  *tools.References
	msgs  []*schema.Message
	start time.Time

	answered  bool // answer text was emitted in an earlier cycle
	firstText time.Duration
	usage     eventbus.Usage
	calls     int

	stragglers sync.WaitGroup // tool goroutines, waited for when the run ends
}

// loop runs the cycles.
func (r *agentRun) loop(ctx context.Context) *pipeline.PluginError {
	defer r.emitUsage()
	r.msgs = r.p.gen.messages(r.cm)
	maxCycles := r.p.cfg.MaxCycles
	for cycle := 1; cycle <= maxCycles; cycle++ {
		last := cycle == maxCycles
		offered, opts := r.offer(cycle, last)
		m, err := r.bind(offered)
		if err != nil {
			return pipeline.Errorf(pipeline.CodeInternal, err, "The model could not be offered the tools.")
		}
		ce := newCycleEmitter(r, cycle, len(offered) > 0 && r.p.cfg.TextToolCalls)
		r.cm.Emitter = ce
		r.cm.References = r.refs.Items()
		batch := r.newToolBatch(ctx, cycle)
		var early func(int, schema.ToolCall)
		if !last && len(offered) > 0 {
			early = func(i int, c schema.ToolCall) { // a call is complete while the model streams: start it now
				ce.nativeCall()
				batch.start(i, c)
			}
		}
		turn, perr := r.p.gen.GenerateTurn(ctx, r.cm, m, r.prompt(),
			TurnOptions{CallOptions: opts, ToolCallIDPrefix: r.idPrefix(cycle), OnToolCall: early})
		calls := ce.finish(turn, perr == nil, offered)
		r.cm.Emitter = r.out
		if perr != nil {
			batch.cancel() // the calls started early are stopped, each still gets its result
			batch.collect()
			return perr
		}
		if len(calls) == 0 {
			batch.collect()
			r.cm.StageDetail(r.detail(cycle))
			return nil
		}
		if last {
			// Offered no tools, the model still called some: nothing
			// runs, and without an answer the question stays open.
			batch.collect()
			r.refuseCalls(cycle, calls)
			if strings.TrimSpace(turn.Answer) != "" {
				r.cm.StageDetail(r.detail(cycle))
				return nil
			}
			return &pipeline.PluginError{Code: "no_answer", Retryable: true,
				Message: fmt.Sprintf("The agent did not reach an answer within %d model calls.", maxCycles)}
		}
		r.calls += len(calls)
		r.msgs = append(r.msgs, &schema.Message{Role: schema.Assistant, Content: turn.Answer, ToolCalls: calls})
		for i, c := range calls { // the calls not started while the model streamed (text tool calls)
			batch.start(i, c)
		}
		for _, res := range batch.collect() {
			r.msgs = append(r.msgs, schema.ToolMessage(res.forModel(), res.call.ID, schema.WithToolName(res.call.Function.Name)))
		}
		r.cm.References = r.refs.Items()
		if perr := pipeline.Canceled(ctx); perr != nil {
			return perr
		}
	}
	return nil // not reached: the last cycle returns
}

// idPrefix names the tool calls of a cycle that the provider sent without
// an id, uniquely on the stream (models compared side by side share it).
func (r *agentRun) idPrefix(cycle int) string {
	if r.cm.Model != "" {
		return "call_" + r.cm.Model + "_" + strconv.Itoa(cycle) + "_"
	}
	return "call_" + strconv.Itoa(cycle) + "_"
}

// offer decides what the model is offered in a cycle, as Onyx does: the
// forced tool alone (required) on the first cycle when force_tool is set,
// nothing on the last, every tool otherwise.
func (r *agentRun) offer(cycle int, last bool) ([]*schema.ToolInfo, []model.Option) {
	switch {
	case last || r.tools.Len() == 0:
		return nil, []model.Option{model.WithTools(nil)}
	case cycle == 1 && r.p.cfg.ForceTool != "":
		if c, ok := r.tools.Lookup(r.p.cfg.ForceTool); ok { // an MCP tool may be unavailable now
			infos := []*schema.ToolInfo{c.Info}
			return infos, []model.Option{model.WithTools(infos), model.WithToolChoice(schema.ToolChoiceForced, c.Name())}
		}
		fallthrough
	default:
		infos := r.tools.Infos()
		return infos, []model.Option{model.WithTools(infos), model.WithToolChoice(schema.ToolChoiceAllowed)}
	}
}

// bind returns the model offering tools (a copy; the configured one is
// shared by every request).
func (r *agentRun) bind(offered []*schema.ToolInfo) (*chatmodel.Model, error) {
	bound, err := r.model.Model.WithTools(offered)
	if err != nil {
		return nil, err
	}
	m := *r.model
	m.Model = bound
	return &m, nil
}

// refuseCalls answers tool calls made when none was offered, so that every
// call on the stream has its one result.
func (r *agentRun) refuseCalls(cycle int, calls []schema.ToolCall) {
	for i, c := range calls {
		r.emitPlaced(eventbus.Of(eventbus.TypeToolResult, eventbus.ToolResult{ToolCallID: c.ID,
			Output: "Not run: the cycle limit was reached.", Status: eventbus.ToolFailed}), cycle, i+1)
	}
}

func (r *agentRun) detail(cycles int) string {
	d := count(cycles, "model call")
	if r.calls > 0 {
		d += ", " + count(r.calls, "tool call")
	}
	return d
}

// emitPlaced emits an event of the loop (a tool's) at its place.
func (r *agentRun) emitPlaced(ev eventbus.Event, turn, tab int) {
	ev.Placement = &eventbus.Placement{Turn: turn, Tab: tab}
	r.out.Emit(ev)
}

// emitUsage emits the run's one usage event: the sum of every model call.
func (r *agentRun) emitUsage() {
	u := r.usage
	u.TotalMS = time.Since(r.start).Milliseconds()
	u.TTFTMS = r.firstText.Milliseconds()
	r.out.Emit(eventbus.Of(eventbus.TypeUsage, u))
}

func toolNames(set *tools.Set) string {
	names := make([]string, 0, set.Len())
	for _, c := range set.Tools() {
		names = append(names, c.Name())
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

var _ pipeline.Plugin = (*AgentLoop)(nil)
