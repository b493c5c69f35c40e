package plugins

import (
	"context"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("research_report", newResearchReport) }

// ResearchReportConfig is the `plugins.research_report` section.
type ResearchReportConfig struct {
	Model        string `mapstructure:"model"`         // a name under models:
	ThinkTags    bool   `mapstructure:"think_tags"`    // wrap thinking deltas in <think>…</think>
	SystemPrompt string `mapstructure:"system_prompt"` // sent first; empty = none
	// Prompt asks for the report: {question} is the research request,
	// {findings} each sub-question with its findings (citations renumbered
	// to the sources), {sources} the numbered sources.
	Prompt string `mapstructure:"prompt"`
	// MaxFindingsTokens bounds the findings in the prompt; longer ones are
	// shortened, the longest first, so the prompt fits the model.
	MaxFindingsTokens int `mapstructure:"max_findings_tokens"`
	// MissingNote ends the report when sub-researchers failed: {questions}
	// lists their sub-questions and why. Empty = no note.
	MissingNote string `mapstructure:"missing_note"`
}

// ResearchReport is the generate stage of the research mode: the model
// writes the answer from the sub-researchers' findings. Their references
// are united into one numbering (a passage several found keeps one
// number), sent as the answer's references, and every [n] of the findings
// is renumbered to it; the report's own citations are filtered against it
// as in the rag mode. When sub-researchers failed, the report ends with a
// note that says which sub-questions are not covered. The usage event is
// the total of every model call of the research.
type ResearchReport struct {
	cfg ResearchReportConfig
	gen *ChatCompletionStream
}

func newResearchReport(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := ResearchReportConfig{Model: "default", ThinkTags: true, SystemPrompt: config.DefaultSystemPrompt,
		Prompt: config.DefaultResearchReportPrompt, MaxFindingsTokens: 3000, MissingNote: config.DefaultResearchMissingNote}
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	switch {
	case !strings.Contains(cfg.Prompt, "{findings}"):
		return nil, fmt.Errorf("%s.prompt: must contain {findings}", c.Key)
	case cfg.MaxFindingsTokens < 200:
		return nil, fmt.Errorf("%s.max_findings_tokens: must be at least 200", c.Key)
	}
	gen := &ChatCompletionStream{cfg: ChatCompletionConfig{Model: cfg.Model, ThinkTags: cfg.ThinkTags}}
	return &ResearchReport{cfg: cfg, gen: gen}, nil
}

// Name implements pipeline.Plugin.
func (p *ResearchReport) Name() string { return "research_report" }

// Events implements pipeline.Plugin.
func (p *ResearchReport) Events() []pipeline.EventType {
	return []pipeline.EventType{pipeline.StageGenerate}
}

// ModelName is the model entry the plugin asks.
func (p *ResearchReport) ModelName() string { return p.cfg.Model }

// OnEvent implements pipeline.Plugin.
func (p *ResearchReport) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	m, perr := chatModel(cm, p.cfg.Model)
	if perr != nil {
		return perr
	}
	st := researchOf(cm)
	c := compile(st.findings)
	findings := formatFindings(st.findings, compact(c.texts, p.cfg.MaxFindingsTokens))
	prompt := strings.NewReplacer("{question}", st.question, "{findings}", findings,
		"{sources}", formatSources(c.refs)).Replace(p.cfg.Prompt)
	msgs := make([]*schema.Message, 0, 2)
	if p.cfg.SystemPrompt != "" {
		msgs = append(msgs, schema.SystemMessage(p.cfg.SystemPrompt))
	}
	msgs = append(msgs, schema.UserMessage(prompt))

	cm.References = c.refs
	cm.NoContext = len(c.refs) == 0 // the citation filter then drops every [n]
	if len(c.refs) > 0 {
		cm.Emit(eventbus.Of(eventbus.TypeReferences, eventbus.References{Items: c.refs}))
	}
	out := cm.Emitter
	cm.Emitter = usageSink{out, st}
	_, perr = p.gen.GenerateTurn(ctx, cm, m, msgs, TurnOptions{})
	cm.Emitter = out
	if perr == nil {
		if note := p.missing(st.findings); note != "" {
			emitRootAnswer(out, "\n\n"+note)
		}
	}
	emitUsageOf(out, st)
	if perr != nil {
		return perr
	}
	cm.StageDetail(count(len(c.refs), "source"))
	return next()
}

// missing is the note on the sub-questions that have no findings, or "".
func (p *ResearchReport) missing(findings []finding) string {
	var failed []string
	for _, f := range findings {
		if f.failure != "" {
			failed = append(failed, fmt.Sprintf("%q (%s)", f.question, f.failure))
		}
	}
	if len(failed) == 0 || p.cfg.MissingNote == "" {
		return ""
	}
	return strings.ReplaceAll(p.cfg.MissingNote, "{questions}", strings.Join(failed, "; "))
}

var _ pipeline.Plugin = (*ResearchReport)(nil)
