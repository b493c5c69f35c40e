package plugins

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cloudwego/eino/schema"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/chatmodel"
	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/think"
	"github.com/chatpipe/chatpipe/internal/tokens"
	"github.com/chatpipe/chatpipe/pipeline"
)

// CompactionConfig is `plugins.load_history.compaction`: after a turn,
// when the history since the last summary passes the budget, its older
// rounds are summarised by a model off the token path; later prompts send
// the summary in their place (with the system prompt) and the newest
// rounds word for word. A mode overrides it like any plugin setting.
type CompactionConfig struct {
	Enabled      bool          `mapstructure:"enabled"`
	Model        string        `mapstructure:"model"`         // a name under models; "" = default
	BudgetTokens int           `mapstructure:"budget_tokens"` // 0 = load_history's max_tokens
	KeepRounds   int           `mapstructure:"keep_rounds"`   // newest rounds never summarised
	Timeout      time.Duration `mapstructure:"timeout"`
	Prompt       string        `mapstructure:"prompt"` // {summary} and {conversation}
}

func defaultCompaction() CompactionConfig {
	return CompactionConfig{Enabled: true, KeepRounds: 2, Timeout: time.Minute, Prompt: config.DefaultCompactionPrompt}
}

func (c CompactionConfig) check(key string) error {
	switch {
	case c.KeepRounds < 1:
		return fmt.Errorf("%s.compaction.keep_rounds: must be at least 1, got %d", key, c.KeepRounds)
	case c.BudgetTokens < 0:
		return fmt.Errorf("%s.compaction.budget_tokens: must be 0 (max_tokens) or a number of tokens, got %d", key, c.BudgetTokens)
	case c.Timeout <= 0:
		return fmt.Errorf("%s.compaction.timeout: must be a positive duration like \"60s\", got %v", key, c.Timeout)
	case !strings.Contains(c.Prompt, "{conversation}"):
		return fmt.Errorf("%s.compaction.prompt: must contain {conversation}", key)
	}
	return nil
}

// summaryLookback is how many of a session's newest summaries are tried
// for the branch being answered: a summary applies only when the last
// message it covers is on that branch (an edit before it starts a branch
// the summary does not describe).
const summaryLookback = 8

// summarised returns the messages of msgs after the newest summary that
// applies to them, and that summary (nil when none does: then msgs as
// they are). A store that fails degrades to no summary.
func summarised(ctx context.Context, cm *pipeline.ChatManage, msgs []conversation.Message) ([]conversation.Message, *conversation.Summary) {
	if cm.Summaries == nil || len(msgs) == 0 {
		return msgs, nil
	}
	list, err := cm.Summaries.Summaries(ctx, cm.SessionID, summaryLookback)
	if err != nil {
		cm.Log().Warn("reading history summaries failed; sending history without them", zap.Error(err))
		return msgs, nil
	}
	for _, sum := range list {
		if i := slices.IndexFunc(msgs, func(m conversation.Message) bool { return m.ID == sum.ToMessageID }); i >= 0 {
			return msgs[i+1:], &sum
		}
	}
	return msgs, nil
}

// compactAfter starts, when the history of this turn passes the budget,
// the job that summarises its older rounds: prev (the summary in use, or
// nil) and msgs (the messages after it, before this turn's question).
func (p *LoadHistory) compactAfter(cm *pipeline.ChatManage, prev *conversation.Summary, msgs []conversation.Message) {
	c := p.cfg.Compaction
	if !c.Enabled || cm.Background == nil || cm.Summaries == nil {
		return
	}
	used, rounds := tokens.Estimate(cm.Query)+4, 1
	if prev != nil {
		used += tokens.Estimate(prev.Content)
	}
	for _, m := range msgs {
		used += tokens.Estimate(m.Content) + 4
		if m.Role == "user" {
			rounds++
		}
	}
	budget := cmp.Or(c.BudgetTokens, p.cfg.MaxTokens)
	if (budget <= 0 || used <= budget) && (p.cfg.MaxRounds <= 0 || rounds <= p.cfg.MaxRounds) {
		return
	}
	// Fold everything but the newest keep_rounds rounds (this turn is one
	// of them), cut where a question starts.
	cut := len(msgs) - 2*(c.KeepRounds-1)
	for cut > 0 && cut < len(msgs) && msgs[cut].Role != "user" {
		cut++
	}
	if cut <= 0 || cut > len(msgs) {
		return
	}
	fold := slices.Clone(msgs[:cut])
	m, err := cm.Models.ChatModel(cmp.Or(c.Model, "default"))
	if err != nil {
		cm.Log().Warn("history compaction has no model; older turns will be dropped", zap.Error(err))
		return
	}
	if m.Provider == "demo" {
		return // the demo model cannot summarise
	}
	job := compaction{cfg: c, sessionID: cm.SessionID, model: m, prev: prev, fold: fold, summaries: cm.Summaries}
	cm.Background.Go("compaction", job.run)
}

// compaction is one summarising job.
type compaction struct {
	cfg       CompactionConfig
	sessionID string
	model     *chatmodel.Model
	prev      *conversation.Summary
	fold      []conversation.Message
	summaries conversation.SummaryStore
}

// maxFoldedChars bounds each message shown to the summariser.
const maxFoldedChars = 4000

func (j compaction) run(ctx context.Context) ([]eventbus.Event, error) {
	var conv strings.Builder
	before := 0
	for _, m := range j.fold {
		if m.Content == "" {
			continue
		}
		before += tokens.Estimate(m.Content) + 4
		if m.Role == "assistant" {
			conv.WriteString("Assistant: ")
		} else {
			conv.WriteString("User: ")
		}
		conv.WriteString(truncateRunes(m.Content, maxFoldedChars))
		conv.WriteString("\n\n")
	}
	prevText, from, count := "", j.fold[0].ID, len(j.fold)
	if j.prev != nil {
		prevText, from, count = j.prev.Content, j.prev.FromMessageID, j.prev.Messages+len(j.fold)
		before += tokens.Estimate(j.prev.Content)
	}
	prompt := strings.NewReplacer("{summary}", prevText, "{conversation}", strings.TrimSpace(conv.String())).Replace(j.cfg.Prompt)
	callCtx, cancel := context.WithTimeout(ctx, j.cfg.Timeout)
	defer cancel()
	reply, err := j.model.Model.Generate(callCtx, []*schema.Message{schema.UserMessage(prompt)}, j.model.Options...)
	if err != nil {
		return nil, fmt.Errorf("summarising history with model %q: %w", j.model.Name, err)
	}
	text := strings.TrimSpace(think.StripBlocks(reply.Content))
	if text == "" {
		return nil, fmt.Errorf("model %q returned an empty summary", j.model.Name)
	}
	sum := conversation.Summary{ID: uuid.Must(uuid.NewV7()).String(), FromMessageID: from,
		ToMessageID: j.fold[len(j.fold)-1].ID, Messages: count, Content: text, Model: j.model.Name}
	if err := j.summaries.SaveSummary(ctx, j.sessionID, sum); err != nil {
		return nil, fmt.Errorf("saving the history summary: %w", err)
	}
	return []eventbus.Event{eventbus.Of(eventbus.TypeHistoryCompacted, eventbus.HistoryCompacted{
		SessionID: j.sessionID, SummaryID: sum.ID, FromMessageID: sum.FromMessageID, ToMessageID: sum.ToMessageID,
		Messages: sum.Messages, TokensBefore: before, TokensAfter: tokens.Estimate(text),
	})}, nil
}

// withSummary is the system prompt with the summary of compacted history
// after it: one system message, which every provider accepts.
func withSummary(system, summary string) string {
	if summary == "" {
		return system
	}
	return strings.TrimSpace(system + "\n\nSummary of the earlier conversation:\n" + summary)
}
