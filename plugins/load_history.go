// Package plugins holds chatpipe's built-in plugins, one file each. Each
// registers itself by name in init(); config.yaml enables and orders them
// per chat mode.
package plugins

import (
	"go.uber.org/zap"

	"context"
	"fmt"

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
}

// LoadHistory puts the session's last rounds into ChatManage.History,
// newest first until the token budget is spent, with thinking stripped
// (models must not be fed their own reasoning back). A history store that
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
	if p.cfg.MaxRounds == 0 || cm.Messages == nil {
		cm.SkipStage("history disabled")
		return next()
	}
	limit := 2 * p.cfg.MaxRounds
	if p.cfg.Compaction.Enabled {
		limit = 0 // what is past max_rounds is summarised, not dropped
	}
	msgs, err := cm.Messages.RecentMessages(ctx, cm.SessionID, cm.UserMessageID, limit)
	if err != nil {
		if perr := pipeline.Canceled(ctx); perr != nil {
			return perr
		}
		cm.Log().Warn("loading history failed; answering without it", zap.Error(err))
		cm.StageDetail("history unavailable; answering without it")
		return next()
	}
	msgs, summary := summarised(ctx, cm, msgs)
	if summary != nil {
		cm.HistorySummary = summary.Content
	}
	cm.History = fitHistory(msgs[max(0, len(msgs)-2*p.cfg.MaxRounds):], p.cfg.MaxTokens)
	cm.StageDetail(fmt.Sprintf("%d messages", len(cm.History)))
	if perr := next(); perr != nil {
		return perr
	}
	p.compactAfter(cm, summary, msgs) // after the turn, off the token path
	return nil
}

// fitHistory keeps the newest messages whose estimated size fits budget,
// never starting the kept history with an assistant message (a reply
// without its question confuses models), and drops thinking.
func fitHistory(msgs []pipeline.HistoryMessage, budget int) []pipeline.HistoryMessage {
	used, from := 0, len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		cost := tokens.Estimate(msgs[i].Content) + 4 // role and framing
		if budget > 0 && used+cost > budget {
			break
		}
		used += cost
		from = i
	}
	for from < len(msgs) && msgs[from].Role != "user" {
		from++
	}
	out := make([]pipeline.HistoryMessage, 0, len(msgs)-from)
	for _, m := range msgs[from:] {
		if m.Content == "" {
			continue
		}
		m.Thinking = ""
		out = append(out, m)
	}
	return out
}
