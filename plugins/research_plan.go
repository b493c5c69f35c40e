package plugins

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("research_plan", newResearchPlan) }

// ResearchPlanConfig is the `plugins.research_plan` section.
type ResearchPlanConfig struct {
	Model     string `mapstructure:"model"`      // a name under models:
	ThinkTags bool   `mapstructure:"think_tags"` // wrap thinking deltas in <think>…</think>
	// Prompt asks for the plan: {question} is the research request,
	// {min} and {max} the bounds on the sub-questions, {clarify} the
	// clarify_instruction when a clarification may be asked ("" otherwise).
	Prompt       string `mapstructure:"prompt"`
	MinQuestions int    `mapstructure:"min_questions"`
	MaxQuestions int    `mapstructure:"max_questions"`
	// Clarify lets the planner ask one clarifying question back instead of
	// a plan when the request is ambiguous; the user's next message
	// answers it and the research goes on with both.
	Clarify             bool   `mapstructure:"clarify"`
	ClarifyInstruction  string `mapstructure:"clarify_instruction"`
	ClarificationPrefix string `mapstructure:"clarification_prefix"` // starts the saved clarifying question, which is how the next message is known to answer it
}

// ResearchPlan is the first stage of the research mode: one model call
// writes a short research plan — between min_questions and max_questions
// sub-questions — streamed with origin [{agent: plan}] so a frontend shows
// it as its own block, then announced as research.plan. With clarify on, a
// request the model finds ambiguous gets one clarifying question instead
// (the answer of this turn); the next message's answer is researched with
// the original request.
type ResearchPlan struct {
	cfg ResearchPlanConfig
	gen *ChatCompletionStream
}

func newResearchPlan(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := ResearchPlanConfig{Model: "default", ThinkTags: true, Prompt: config.DefaultResearchPlanPrompt,
		MinQuestions: 3, MaxQuestions: 6, ClarifyInstruction: config.DefaultResearchClarifyInstruction,
		ClarificationPrefix: "Before I research this: "}
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	switch {
	case !strings.Contains(cfg.Prompt, "{question}"):
		return nil, fmt.Errorf("%s.prompt: must contain {question}", c.Key)
	case cfg.MinQuestions < 1 || cfg.MaxQuestions > 20 || cfg.MinQuestions > cfg.MaxQuestions:
		return nil, fmt.Errorf("%s.min_questions, max_questions: need 1 <= min_questions <= max_questions <= 20", c.Key)
	case cfg.Clarify && strings.TrimSpace(cfg.ClarificationPrefix) == "":
		return nil, fmt.Errorf("%s.clarification_prefix: must not be empty when clarify is on", c.Key)
	}
	gen := &ChatCompletionStream{cfg: ChatCompletionConfig{Model: cfg.Model, ThinkTags: cfg.ThinkTags}}
	return &ResearchPlan{cfg: cfg, gen: gen}, nil
}

// Name implements pipeline.Plugin.
func (p *ResearchPlan) Name() string { return "research_plan" }

// Events implements pipeline.Plugin.
func (p *ResearchPlan) Events() []pipeline.EventType { return []pipeline.EventType{StagePlan} }

// ModelName is the model entry the plugin asks.
func (p *ResearchPlan) ModelName() string { return p.cfg.Model }

// clarifyMarker starts a planner's reply that asks back instead of planning.
const clarifyMarker = "CLARIFY:"

// OnEvent implements pipeline.Plugin.
func (p *ResearchPlan) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	m, perr := chatModel(cm, p.cfg.Model)
	if perr != nil {
		return perr
	}
	st := researchOf(cm)
	mayClarify := p.cfg.Clarify
	if original, ok := p.answersClarification(cm); ok {
		st.question = original + "\n\nClarification: " + cm.SearchQuery()
		mayClarify = false // asked once already
	}

	// The planner's call streams as a subagent of its own.
	plan := &pipeline.ChatManage{Logger: cm.Logger, TenantID: cm.TenantID, SessionID: cm.SessionID,
		MessageID: cm.MessageID, Mode: cm.Mode, Model: cm.Model, Models: cm.Models,
		Emitter: newOriginEmitter(cm.Emitter, st, eventbus.Hop{Agent: AgentPlan})}
	clarify := ""
	if mayClarify {
		clarify = p.cfg.ClarifyInstruction
	}
	prompt := strings.NewReplacer("{question}", st.question, "{min}", strconv.Itoa(p.cfg.MinQuestions),
		"{max}", strconv.Itoa(p.cfg.MaxQuestions), "{clarify}", clarify).Replace(p.cfg.Prompt)
	turn, perr := p.gen.GenerateTurn(ctx, plan, m, []*schema.Message{schema.UserMessage(prompt)}, TurnOptions{})
	if perr != nil {
		return perr
	}
	reply := strings.TrimSpace(turn.Answer)
	if mayClarify && len(reply) >= len(clarifyMarker) && strings.EqualFold(reply[:len(clarifyMarker)], clarifyMarker) {
		question := strings.TrimSpace(reply[len(clarifyMarker):])
		cm.Emit(eventbus.Of(eventbus.TypeResearchPlan, eventbus.ResearchPlan{Clarification: question}))
		emitRootAnswer(cm.Emitter, p.cfg.ClarificationPrefix+question)
		emitUsageOf(cm.Emitter, st)
		cm.StageDetail("asked a clarifying question")
		return nil // this turn's answer is the question
	}
	st.questions = parsePlan(reply, p.cfg.MaxQuestions)
	if len(st.questions) == 0 {
		st.questions = []string{st.question} // no usable plan: research the request as one question
	}
	cm.Emit(eventbus.Of(eventbus.TypeResearchPlan, eventbus.ResearchPlan{Questions: st.questions}))
	cm.StageDetail(count(len(st.questions), "sub-question"))
	return next()
}

// answersClarification reports whether the question answers a clarifying
// question this plugin asked in the previous turn, and returns the
// request that was being clarified.
func (p *ResearchPlan) answersClarification(cm *pipeline.ChatManage) (string, bool) {
	h := cm.History
	if !p.cfg.Clarify || len(h) < 2 {
		return "", false
	}
	last, asked := h[len(h)-1], h[len(h)-2]
	if last.Role != "assistant" || asked.Role != "user" || !strings.HasPrefix(last.Content, p.cfg.ClarificationPrefix) {
		return "", false
	}
	return asked.Content, true
}

// planItemRE strips a plan line's numbering or bullet.
var planItemRE = regexp.MustCompile(`^\s*(?:\d{1,2}\s*[.):]|[-*•])\s*`)

// parsePlan reads the sub-questions of a plan: one per line, numbered or
// bulleted (other lines, such as a heading, are skipped when the plan has
// numbered or bulleted ones), at most max.
func parsePlan(reply string, max int) []string {
	var items, lines []string
	for _, line := range strings.Split(reply, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if planItemRE.MatchString(line) {
			if q := strings.TrimSpace(planItemRE.ReplaceAllString(line, "")); q != "" {
				items = append(items, q)
			}
			continue
		}
		lines = append(lines, line)
	}
	if len(items) == 0 {
		items = lines
	}
	if len(items) > max {
		items = items[:max]
	}
	return items
}

// emitUsageOf emits the research's total usage as the answer's usage.
func emitUsageOf(out eventbus.Emitter, st *research) {
	out.Emit(eventbus.Of(eventbus.TypeUsage, st.totalUsage()))
}

var _ pipeline.Plugin = (*ResearchPlan)(nil)
