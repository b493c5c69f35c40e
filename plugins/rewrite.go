package plugins

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/llm"
	"github.com/chatpipe/chatpipe/internal/think"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("rewrite", newRewrite) }

// RewriteConfig is the `plugins.rewrite` section.
type RewriteConfig struct {
	Model      string        `mapstructure:"model"`       // a name under models:
	Prompt     string        `mapstructure:"prompt"`      // with {history} and {question}
	MaxHistory int           `mapstructure:"max_history"` // most recent messages shown to the model
	Timeout    time.Duration `mapstructure:"timeout"`     // bound of the model call
}

// Rewrite turns a follow-up ("and how do I stop it?") into a standalone
// question with one model call, so that search finds what the user means.
// It runs only when there is history and a knowledge base to search. Whatever goes wrong — no model, an
// error, a timeout, an unusable reply — the question as asked is searched
// and the stage detail says why.
type Rewrite struct{ cfg RewriteConfig }

func newRewrite(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := RewriteConfig{Model: "default", Prompt: config.DefaultRewritePrompt, MaxHistory: 6, Timeout: 10 * time.Second}
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	switch {
	case !strings.Contains(cfg.Prompt, "{question}"):
		return nil, fmt.Errorf("%s.prompt: must contain {question}", c.Key)
	case cfg.MaxHistory < 1:
		return nil, fmt.Errorf("%s.max_history: must be at least 1", c.Key)
	case cfg.Timeout <= 0:
		return nil, fmt.Errorf("%s.timeout: must be positive", c.Key)
	}
	return &Rewrite{cfg: cfg}, nil
}

// Name implements pipeline.Plugin.
func (p *Rewrite) Name() string { return "rewrite" }

// Events implements pipeline.Plugin.
func (p *Rewrite) Events() []pipeline.EventType { return []pipeline.EventType{pipeline.StageRewrite} }

// ModelName is the model entry the plugin asks.
func (p *Rewrite) ModelName() string { return p.cfg.Model }

// OnEvent implements pipeline.Plugin.
func (p *Rewrite) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	switch {
	case len(cm.History) == 0:
		cm.SkipStage("no history; the question is used as asked")
		return next()
	case cm.Knowledge == nil: // the rewritten question would only be searched
		cm.SkipStage("no knowledge base to search; the question is used as asked")
		return next()
	}
	rewritten, why := p.rewrite(ctx, cm)
	if perr := pipeline.Canceled(ctx); perr != nil {
		return perr
	}
	switch {
	case why != "":
		cm.StageDetail(why + "; searching with the question as asked")
	case rewritten == strings.TrimSpace(cm.Query):
		cm.StageDetail("already standalone")
	default:
		cm.RewrittenQuery = rewritten
		cm.Emit(eventbus.Of(eventbus.TypeQueryRewritten, eventbus.QueryRewritten{Original: cm.Query, Rewritten: rewritten}))
		cm.StageDetail("rewritten to a standalone question")
	}
	return next()
}

// rewrite asks the model; a non-empty why says why its answer is not used.
func (p *Rewrite) rewrite(ctx context.Context, cm *pipeline.ChatManage) (rewritten, why string) {
	if cm.Models == nil {
		return "", "no models configured"
	}
	m, err := cm.Models.ChatModel(p.cfg.Model)
	if err != nil {
		return "", fmt.Sprintf("model %q is not configured", p.cfg.Model)
	}
	if m.Provider == "demo" {
		return "", "the offline demo model does not rewrite questions"
	}
	prompt := strings.NewReplacer("{history}", p.history(cm.History), "{question}", cm.Query).Replace(p.cfg.Prompt)

	callCtx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	msg, err := generateTraced(callCtx, cm, m, "rewrite", []*schema.Message{schema.UserMessage(prompt)})
	switch {
	case ctx.Err() != nil:
		return "", "cancelled"
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || callCtx.Err() != nil):
		return "", fmt.Sprintf("the model did not answer within %s", p.cfg.Timeout)
	case err != nil:
		_, msg, _ := llm.Describe(err, m.Name)
		return "", "the model call failed: " + strings.TrimSuffix(msg, ".")
	}
	return parseRewrite(msg.Content, cm.Query)
}

// maxHistoryChars bounds each history message in the prompt: a rewrite
// needs what was talked about, not whole answers.
const maxHistoryChars = 600

// history renders the last MaxHistory messages as "User: …" lines.
func (p *Rewrite) history(h []conversation.Message) string {
	if len(h) > p.cfg.MaxHistory {
		h = h[len(h)-p.cfg.MaxHistory:]
	}
	var b strings.Builder
	for i, m := range h {
		if i > 0 {
			b.WriteByte('\n')
		}
		if m.Role == "assistant" {
			b.WriteString("Assistant: ")
		} else {
			b.WriteString("User: ")
		}
		b.WriteString(truncateRunes(strings.Join(strings.Fields(m.Content), " "), maxHistoryChars))
	}
	return b.String()
}

// rewritePrefixes are labels models put before the question; they are
// removed, case-insensitively, repeatedly ("**Rewritten question:** …").
var rewritePrefixes = []string{
	"standalone question:", "rewritten question:", "rewritten query:", "rewritten:", "rewrite:",
	"question:", "query:", "output:", "answer:",
	"改写后的问题：", "改写后的问题:", "独立问题：", "独立问题:", "改写：", "改写:", "问题：", "问题:",
}

// refusals start replies that answer or refuse instead of rewriting.
var refusals = []string{"i'm sorry", "i am sorry", "sorry", "i cannot", "i can't", "as an ai", "抱歉", "对不起", "[demo model]"}

// parseRewrite reads the model's reply tolerantly: reasoning in <think>
// tags is dropped, then the first line with text is taken, without labels,
// markdown emphasis or quotes. A reply that is empty, far longer than a
// question, a refusal or the prompt echoed back is rejected with a reason.
func parseRewrite(reply, original string) (string, string) {
	text := think.StripBlocks(reply)
	q := ""
	for line := range strings.SplitSeq(text, "\n") {
		if q = cleanRewriteLine(line); q != "" {
			break
		}
	}
	lower := strings.ToLower(q)
	switch {
	case q == "":
		return "", "the model returned no question"
	case utf8.RuneCountInString(q) > 3*utf8.RuneCountInString(original)+200:
		return "", "the model's reply is too long to be the question"
	case strings.Contains(q, "{question}") || strings.Contains(q, "{history}"):
		return "", "the model echoed the prompt"
	}
	for _, r := range refusals {
		if strings.HasPrefix(lower, r) {
			return "", "the model answered instead of rewriting"
		}
	}
	return q, ""
}

func cleanRewriteLine(line string) string {
	for {
		before := line
		line = strings.TrimSpace(line)
		line = strings.TrimLeft(line, "#>-• ")
		line = strings.Trim(line, "*")
		line = strings.TrimSpace(line)
		lower := strings.ToLower(line)
		for _, p := range rewritePrefixes {
			if strings.HasPrefix(lower, p) {
				line = line[len(p):]
				break
			}
		}
		line = unquote(strings.TrimSpace(line))
		if line == before {
			return line
		}
	}
}

// quotePairs are the quotes a model may wrap the question in.
var quotePairs = [][2]string{{`"`, `"`}, {"'", "'"}, {"`", "`"}, {"“", "”"}, {"‘", "’"}, {"「", "」"}, {"『", "』"}}

func unquote(s string) string {
	for _, q := range quotePairs {
		if len(s) >= len(q[0])+len(q[1]) && strings.HasPrefix(s, q[0]) && strings.HasSuffix(s, q[1]) {
			return strings.TrimSpace(s[len(q[0]) : len(s)-len(q[1])])
		}
	}
	return s
}

// truncateRunes shortens s to at most n runes, marking the cut with "…".
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n {
			break
		}
		count++
	}
	return s[:i] + "…"
}

var _ pipeline.Plugin = (*Rewrite)(nil)
