package plugins

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("research_run", newResearchRun) }

// ResearchRunConfig is the `plugins.research_run` section.
type ResearchRunConfig struct {
	// Width is how many sub-researchers run at once.
	Width int `mapstructure:"width"`
	// MaxTokens bounds the tokens one sub-researcher streams (thinking,
	// answer, tool arguments); past it, it is stopped and what it wrote
	// is kept.
	MaxTokens int `mapstructure:"max_tokens"`
	// Timeout bounds one sub-researcher; past it, it is stopped likewise.
	Timeout time.Duration `mapstructure:"timeout"`
	// Prompt is the question a sub-researcher is asked: {question} is its
	// sub-question, {request} the whole research request.
	Prompt string `mapstructure:"prompt"`
	// Agent are agent_loop settings for the sub-researchers, laid over
	// plugins.agent_loop (max_cycles bounds each one's model calls; tools
	// lists what they may use).
	Agent map[string]any `mapstructure:"agent"`
}

// ResearchRun is the research stage of the research mode: every
// sub-question of the plan goes to a sub-researcher — the agent_loop
// plugin (its tools: knowledge_search, fetch_document, MCP tools) run on
// a request of its own — with up to width of them at once, each bounded by
// cycles, tokens and time. Every event a sub-researcher emits carries the
// origin [{agent: sub, id, index}]; research.subagent events report when
// each starts and how it ended. One failing sub-researcher does not fail
// the research: the report says what is missing. A stop ends every
// sub-researcher (their provider calls are aborted) and the answer saved
// is the findings so far.
type ResearchRun struct {
	cfg   ResearchRunConfig
	agent *AgentLoop
}

func newResearchRun(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := ResearchRunConfig{Width: 3, MaxTokens: 4000, Timeout: 2 * time.Minute, Prompt: config.DefaultResearchSubPrompt}
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	switch {
	case cfg.Width < 1 || cfg.Width > 16:
		return nil, fmt.Errorf("%s.width: must be between 1 and 16", c.Key)
	case cfg.MaxTokens < 100:
		return nil, fmt.Errorf("%s.max_tokens: must be at least 100", c.Key)
	case cfg.Timeout <= 0:
		return nil, fmt.Errorf("%s.timeout: must be positive", c.Key)
	case !strings.Contains(cfg.Prompt, "{question}"):
		return nil, fmt.Errorf("%s.prompt: must contain {question}", c.Key)
	}
	raw := maps.Clone(c.Sections["agent_loop"])
	if raw == nil {
		raw = map[string]any{}
	}
	maps.Copy(raw, cfg.Agent)
	agent, err := newAgentLoop(pipeline.PluginConfig{Name: "agent_loop", Mode: c.Mode, Key: c.Key + ".agent",
		Raw: raw, Chain: c.Chain, Fingerprint: c.Fingerprint, Sections: c.Sections})
	if err != nil {
		return nil, err
	}
	return &ResearchRun{cfg: cfg, agent: agent.(*AgentLoop)}, nil
}

// Name implements pipeline.Plugin.
func (p *ResearchRun) Name() string { return "research_run" }

// Events implements pipeline.Plugin.
func (p *ResearchRun) Events() []pipeline.EventType { return []pipeline.EventType{StageResearch} }

// ModelName is the model entry the sub-researchers ask.
func (p *ResearchRun) ModelName() string { return p.agent.ModelName() }

// RemoteTools lists the MCP tools the sub-researchers may call.
func (p *ResearchRun) RemoteTools() []string { return p.agent.RemoteTools() }

// Why a sub-researcher was ended early.
var (
	errSubBudget  = errors.New("research: sub-researcher reached its token budget")
	errSubTimeout = errors.New("research: sub-researcher ran out of time")
)

// OnEvent implements pipeline.Plugin.
func (p *ResearchRun) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	st := researchOf(cm)
	if len(st.questions) == 0 {
		st.questions = []string{st.question} // no planner in the chain: one sub-researcher
	}
	st.findings = make([]finding, len(st.questions))
	sem := make(chan struct{}, p.cfg.Width)
	var wg sync.WaitGroup
	for i, q := range st.questions {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			st.findings[i] = finding{question: q, failure: "stopped before it started"}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			st.findings[i] = p.sub(ctx, cm, st, i, q)
		}()
	}
	wg.Wait()

	failed := 0
	for _, f := range st.findings {
		if f.failure != "" {
			failed++
		}
	}
	detail := count(len(st.findings), "sub-researcher")
	if failed > 0 {
		detail += fmt.Sprintf(", %d failed", failed)
	}
	cm.StageDetail(detail)
	if perr := pipeline.Canceled(ctx); perr != nil {
		p.saveSoFar(cm, st)
		return perr
	}
	return next()
}

// sub runs the sub-researcher of question i and returns its findings.
func (p *ResearchRun) sub(ctx context.Context, cm *pipeline.ChatManage, st *research, i int, question string) (f finding) {
	f.question = question
	ctx, cancel := context.WithTimeoutCause(ctx, p.cfg.Timeout, errSubTimeout)
	defer cancel()
	ctx, cut := context.WithCancelCause(ctx)
	defer cut(nil)

	out := newOriginEmitter(cm.Emitter, st, eventbus.Hop{Agent: AgentSub, ID: "sub" + strconv.Itoa(i+1), Index: i + 1})
	out.budget, out.over = p.cfg.MaxTokens, func() { cut(errSubBudget) }
	out.Emit(eventbus.Of(eventbus.TypeResearchSubagent, eventbus.ResearchSubagent{Question: question, Status: eventbus.StageStarted}))
	sub := &pipeline.ChatManage{Logger: cm.Logger, TenantID: cm.TenantID, SessionID: cm.SessionID,
		MessageID: cm.MessageID, UserMessageID: cm.UserMessageID, Mode: cm.Mode, Model: cm.Model,
		Query:   strings.NewReplacer("{question}", question, "{request}", st.question).Replace(p.cfg.Prompt),
		Emitter: out, Messages: cm.Messages, Models: cm.Models, Knowledge: cm.Knowledge, Cache: cm.Cache,
		RemoteTools: cm.RemoteTools} // no Approvals: a tool that needs one is denied, nobody waits on a sub-researcher

	perr := p.runAgent(ctx, sub)
	out.closeOpen()
	f.text, f.refs = out.result()
	cause := context.Cause(ctx)
	switch {
	case perr == nil:
	case errors.Is(cause, errSubBudget) || errors.Is(cause, errSubTimeout):
		if strings.TrimSpace(f.text) == "" {
			f.failure = budgetReason(cause, p.cfg)
		} else {
			f.cut = budgetReason(cause, p.cfg)
		}
	case ctx.Err() != nil:
		f.failure = "stopped"
	default:
		f.failure = perr.Message
		cm.Log().Warn("a sub-researcher failed", zap.Int("index", i+1), zap.String("code", perr.Code), zap.Error(perr))
	}
	ev := eventbus.ResearchSubagent{Question: question, Status: eventbus.StageFinished, References: len(f.refs), Detail: f.cut}
	if f.failure != "" {
		ev.Status, ev.Detail, ev.References = eventbus.StageFailed, f.failure, 0
		f.text, f.refs = "", nil
	}
	out.Emit(eventbus.Of(eventbus.TypeResearchSubagent, ev))
	return f
}

// runAgent runs the agent loop on the sub-researcher's request; a panic
// fails this sub-researcher only.
func (p *ResearchRun) runAgent(ctx context.Context, sub *pipeline.ChatManage) (perr *pipeline.PluginError) {
	defer func() {
		if v := recover(); v != nil {
			perr = pipeline.Errorf(pipeline.CodeInternal, fmt.Errorf("panic: %v", v), "The sub-researcher failed unexpectedly.")
		}
	}()
	return p.agent.OnEvent(ctx, pipeline.StageGenerate, sub, func() *pipeline.PluginError { return nil })
}

func budgetReason(cause error, cfg ResearchRunConfig) string {
	if errors.Is(cause, errSubBudget) {
		return fmt.Sprintf("it reached its budget of %d tokens", cfg.MaxTokens)
	}
	return fmt.Sprintf("it did not finish within %s", cfg.Timeout)
}

// saveSoFar makes the findings gathered before a stop the stopped answer,
// so the saved message keeps what the research found.
func (p *ResearchRun) saveSoFar(cm *pipeline.ChatManage, st *research) {
	c := compile(st.findings)
	if len(c.refs) > 0 {
		cm.Emit(eventbus.Of(eventbus.TypeReferences, eventbus.References{Items: c.refs}))
	}
	emitRootAnswer(cm.Emitter, "The research was stopped before its report. Findings so far:\n\n"+
		formatFindings(st.findings, c.texts))
	emitUsageOf(cm.Emitter, st)
}

var _ pipeline.Plugin = (*ResearchRun)(nil)
