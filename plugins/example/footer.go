// Package example holds the plugins docs/plugins.md builds from scratch,
// with their tests. chatpipe does not link it: import it (blank) from
// main.go to use them, or copy them into a package of your own.
package example

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("footer", newFooter) }

// FooterConfig is the `plugins.footer` section.
type FooterConfig struct {
	Text     string `mapstructure:"text"`      // appended to every answer
	MinChars int    `mapstructure:"min_chars"` // shorter answers get no footer
}

// Footer appends a line, such as a disclaimer, to every complete answer.
// It wraps the emitter: the footer goes out as one more answer delta just
// before the answer block ends, so the client shows it and chatpipe saves it.
type Footer struct{ cfg FooterConfig }

func newFooter(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	cfg := FooterConfig{Text: "\n\n(Answers can be wrong: check the cited sources.)"} // defaults first
	if err := c.Decode(&cfg); err != nil {
		return nil, err // names the key; unknown keys are errors
	}
	if strings.TrimSpace(cfg.Text) == "" {
		return nil, fmt.Errorf("%s.text: must not be empty", c.Key)
	}
	return &Footer{cfg: cfg}, nil
}

// Name implements pipeline.Plugin.
func (p *Footer) Name() string { return "footer" }

// Events implements pipeline.Plugin: one stage of its own.
func (p *Footer) Events() []pipeline.EventType { return []pipeline.EventType{"footer"} }

// OnEvent implements pipeline.Plugin.
func (p *Footer) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	// Before next(): put a wrapper in front of the emitter. Its state is
	// this request's, so the plugin itself stays safe for concurrent use.
	inner := cm.Emitter
	var mu sync.Mutex
	chars := 0
	cm.Emitter = eventbus.EmitterFunc(func(ev eventbus.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Type {
		case eventbus.TypeAnswerDelta:
			chars += utf8.RuneCountInString(ev.Text)
		case eventbus.TypeAnswerEnd:
			if ctx.Err() == nil && chars >= p.cfg.MinChars { // not on a stopped answer
				inner.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, p.cfg.Text))
			}
			chars = 0
		}
		inner.Emit(ev) // everything else passes unchanged
	})
	defer func() { cm.Emitter = inner }() // after next(): restore the emitter

	return next()
}
