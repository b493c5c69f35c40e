// This file is the example plugin of docs/en-writing-a-plugin.md, byte for
// byte apart from the package clause and this comment (gofmt-normalised):
// TestWritingAPluginExampleCompilesAndFilters keeps the two identical, so
// the guide's code is code that compiles and runs.

package samples_test

import (
	"context"
	"strings"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("word_filter", newWordFilter) }

// WordFilterConfig is the plugins.word_filter section.
type WordFilterConfig struct {
	Words []string `mapstructure:"words"`
	Mask  string   `mapstructure:"mask"`
}

type WordFilter struct{ cfg WordFilterConfig }

func newWordFilter(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := WordFilterConfig{Mask: "***"} // defaults first
	if err := c.Decode(&cfg); err != nil {
		return nil, err // names the key; unknown keys are errors
	}
	return &WordFilter{cfg: cfg}, nil
}

func (p *WordFilter) Name() string                 { return "word_filter" }
func (p *WordFilter) Events() []pipeline.EventType { return []pipeline.EventType{"word_filter"} }

func (p *WordFilter) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	inner := cm.Emitter
	cm.Emitter = eventbus.EmitterFunc(func(ev eventbus.Event) {
		if ev.Type == eventbus.TypeAnswerDelta {
			for _, w := range p.cfg.Words {
				ev.Text = strings.ReplaceAll(ev.Text, w, p.cfg.Mask)
			}
		}
		inner.Emit(ev)
	})
	defer func() { cm.Emitter = inner }() // after: restore the emitter
	return next()
}
