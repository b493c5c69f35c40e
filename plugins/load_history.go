// Package plugins holds chatpipe's built-in plugins, one file each. Each
// registers itself by name in init(); config.yaml enables and orders them
// per chat mode.
package plugins

import (
	"go.uber.org/zap"

	"context"
	"fmt"

	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/tokens"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("load_history", newLoadHistory) }

// LoadHistoryConfig is the `plugins.load_history` section.
type LoadHistoryConfig struct {
	MaxRounds int `mapstructure:"max_rounds"` // question/answer pairs to keep
	MaxTokens int `mapstructure:"max_tokens"` // budget for the kept history
	// Compaction summarises older turns instead of dropping them
	// (history_compaction.go).
	Compaction CompactionConfig `mapstructure:"compaction"`
	// ToolCalls sends an agent answer's tool calls and their results back
	// to the model, in the provider's tool-message format, before the
	// answer's text. Off by default: the results can be long, and some
	// providers refuse tool messages in a request that offers no tools.
	ToolCalls bool `mapstructure:"tool_calls"`
}

// LoadHistory puts the branch being answered into ChatManage.History:
// the question's ancestors in the session's tree (never another branch),
// newest first until the rounds and the token budget are spent, with
// thinking stripped (models must not be fed their own reasoning back).
// Roles always alternate, question then answer, which providers that
// require it (Anthropic, Gemini) insist on — see historyText for how
// answers that did not complete are represented. A history store that
// fails degrades to no history: the question is still answered.
type LoadHistory struct{ cfg LoadHistoryConfig }

func newLoadHistory(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := LoadHistoryConfig{MaxRounds: 5, MaxTokens: 3000, Compaction: defaultCompaction()}
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	if err := cfg.Compaction.check(c.Key); err != nil {
		return nil, err
	}
	if cfg.MaxRounds < 0 || cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("%s: max_rounds and max_tokens must not be negative", c.Key)
	}
	return &LoadHistory{cfg: cfg}, nil
}

// Name implements pipeline.Plugin.
func (p *LoadHistory) Name() string { return "load_history" }

// Events implements pipeline.Plugin.
func (p *LoadHistory) Events() []pipeline.EventType {
	return []pipeline.EventType{pipeline.StageLoadHistory}
}

// OnEvent implements pipeline.Plugin.
func (p *LoadHistory) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	msgs, summary, loaded, perr := p.load(ctx, cm)
	if perr != nil {
		return perr
	}
	if perr := next(); perr != nil {
		return perr
	}
	if loaded {
		p.compactAfter(cm, summary, msgs) // after the turn, off the token path
	}
	return nil
}

// load puts the history in cm; loaded is false when it answers without
// one. Apart from OnEvent, under whose frame the generation goroutine
// rests while the model streams (see handler.streamTail).
func (p *LoadHistory) load(ctx context.Context, cm *pipeline.ChatManage) (
	msgs []conversation.Message, summary *conversation.Summary, loaded bool, perr *pipeline.PluginError) {
	if p.cfg.MaxRounds == 0 || cm.Messages == nil {
		cm.SkipStage("history disabled")
		return nil, nil, false, nil
	}
	msgs, err := p.loadBranch(ctx, cm)
	if err != nil {
		if perr := pipeline.Canceled(ctx); perr != nil {
			return nil, nil, false, perr
		}
		cm.Log().Warn("loading history failed; answering without it", zap.Error(err))
		cm.StageDetail("history unavailable; answering without it")
		return nil, nil, false, nil
	}
	msgs, summary = summarised(ctx, cm, msgs)
	if summary != nil {
		cm.HistorySummary = summary.Content
	}
	cm.History = fitHistory(msgs[max(0, len(msgs)-2*p.cfg.MaxRounds):], p.cfg.MaxTokens)
	cm.StageDetail(fmt.Sprintf("%d messages", len(cm.History)))
	return msgs, summary, true, nil
}

// loadBranch reads the branch the question is on, as the model will see
// it: alternating roles, the newest max_rounds rounds, each answer's text
// per historyText and its tool calls when configured.
func (p *LoadHistory) loadBranch(ctx context.Context, cm *pipeline.ChatManage) ([]conversation.Message, error) {
	limit := 2 * p.cfg.MaxRounds
	if p.cfg.Compaction.Enabled {
		// Rounds past max_rounds are summarised, not dropped: OnEvent
		// keeps the newest max_rounds of what no summary covers.
		limit = 0
	}
	branch, err := cm.Messages.Branch(ctx, cm.SessionID, cm.UserMessageID, limit)
	if err != nil {
		return nil, err
	}
	msgs := alternateRoles(branch)
	if limit > 0 && len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	for i := range msgs {
		msgs[i].Content = historyText(msgs[i])
		if !p.cfg.ToolCalls {
			msgs[i].ToolCalls = nil
		}
	}
	return msgs, nil
}

// alternateRoles makes msgs a sequence of question/answer rounds. A branch of
// the tree alternates already; this keeps the rule for readers that may
// not (a stateless request's own history): of two questions in a row the
// first gets an empty answer, which historyText marks, and a trailing
// question (the one being answered is never in msgs) is dropped.
func alternateRoles(msgs []conversation.Message) []conversation.Message {
	out := make([]conversation.Message, 0, len(msgs))
	for _, m := range msgs {
		wantUser := len(out)%2 == 0
		switch {
		case (m.Role == "user") == wantUser:
			out = append(out, m)
		case wantUser: // an answer without its question: dropped
		default: // a question without an answer: the answer is missing
			out = append(out, conversation.Message{Role: "assistant", Status: "failed"}, m)
		}
	}
	if len(out)%2 == 1 {
		out = out[:len(out)-1]
	}
	return out
}

// Markers that tell the model an earlier answer did not complete. The
// rule: an answer that failed or was stopped (or is still being written)
// is always sent, so roles alternate; with no text it is this marker
// alone, with some text it is the text followed by the marker, so the
// model neither takes a fragment for a finished answer nor repeats it.
const (
	markNoAnswer   = "[No answer: this reply ended before any text was written.]"
	markIncomplete = "[This reply is incomplete: it ended before it was finished.]"
)

// historyText is what the model is sent as m's content.
func historyText(m conversation.Message) string {
	if m.Role != "assistant" || m.Status == "" || m.Status == "completed" {
		return m.Content
	}
	if m.Content == "" {
		return markNoAnswer
	}
	return m.Content + "\n\n" + markIncomplete
}

// fitHistory keeps the newest messages whose estimated size fits budget,
// never starting the kept history with an assistant message (a reply
// without its question confuses models), and drops thinking.
func fitHistory(msgs []conversation.Message, budget int) []conversation.Message {
	used, from := 0, len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		cost := tokens.Estimate(msgs[i].Content) + 4 // role and framing
		for _, c := range msgs[i].ToolCalls {
			cost += tokens.Estimate(c.Arguments) + tokens.Estimate(c.Output) + 8
		}
		if budget > 0 && used+cost > budget {
			break
		}
		used += cost
		from = i
	}
	for from < len(msgs) && msgs[from].Role != "user" {
		from++
	}
	out := make([]conversation.Message, 0, len(msgs)-from)
	for _, m := range msgs[from:] {
		m.Thinking = ""
		out = append(out, m)
	}
	return out
}
