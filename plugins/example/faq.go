package example

import (
	"context"
	"fmt"
	"strings"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/pipeline"
)

func init() { pipeline.Register("faq", newFAQ) }

// FAQConfig is the `plugins.faq` section.
type FAQConfig struct {
	Entries []FAQEntry `mapstructure:"entries"`
}

// FAQEntry is one known question and its answer.
type FAQEntry struct {
	Question string `mapstructure:"question"`
	Answer   string `mapstructure:"answer"`
}

// FAQ answers known questions itself and ends the chain there: no search,
// no model call. Other questions go on down the chain.
type FAQ struct{ answers map[string]string }

func newFAQ(c pipeline.PluginConfig) (pipeline.Plugin, error) {
	var cfg FAQConfig
	if err := c.Decode(&cfg); err != nil {
		return nil, err
	}
	answers := map[string]string{}
	for i, e := range cfg.Entries {
		if normalize(e.Question) == "" || strings.TrimSpace(e.Answer) == "" {
			return nil, fmt.Errorf("%s.entries[%d]: needs a question and an answer", c.Key, i)
		}
		answers[normalize(e.Question)] = e.Answer
	}
	return &FAQ{answers: answers}, nil
}

// normalize ignores case, spacing and the closing question mark.
func normalize(q string) string {
	return strings.TrimRight(strings.Join(strings.Fields(strings.ToLower(q)), " "), "?")
}

// Name implements pipeline.Plugin.
func (p *FAQ) Name() string { return "faq" }

// Events implements pipeline.Plugin.
func (p *FAQ) Events() []pipeline.EventType { return []pipeline.EventType{"faq"} }

// OnEvent implements pipeline.Plugin.
func (p *FAQ) OnEvent(_ context.Context, _ pipeline.EventType, cm *pipeline.ChatManage,
	next func() *pipeline.PluginError) *pipeline.PluginError {
	answer, ok := p.answers[normalize(cm.Query)]
	if !ok {
		cm.SkipStage("not a known question")
		return next()
	}
	cm.StageDetail("answered from the FAQ")
	cm.Emit(eventbus.Event{Type: eventbus.TypeAnswerStart})
	cm.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, answer))
	cm.Emit(eventbus.Event{Type: eventbus.TypeAnswerEnd})
	return nil // short-circuit: the rest of the chain never runs
}
