package run

import (
	"strings"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/think"
)

// persister is the bus subscriber that gathers what the assistant message
// will be saved as: the concatenated answer and thinking deltas (so the
// saved text is exactly what readers received, less the think tags, which
// are a wire format), the last references, the usage and the first error.
// The run saves it once, at the end.
type persister struct {
	answer     strings.Builder
	thinking   strings.Builder
	untag      think.Untag
	references []eventbus.Reference
	usage      *eventbus.Usage
	errMsg     string
	// model, when set, keeps only the events placed with this model: the
	// answer of one model of several answering side by side.
	model string
}

// persistedTypes are the events the persister needs.
var persistedTypes = []eventbus.Type{
	eventbus.TypeAnswerDelta, eventbus.TypeThinkingStart, eventbus.TypeThinkingDelta, eventbus.TypeReferences,
	eventbus.TypeUsage, eventbus.TypeError,
}

func (p *persister) handle(ev *eventbus.Event) {
	if p.model != "" && (ev.Placement == nil || ev.Placement.Model != p.model) {
		return
	}
	switch ev.Type {
	case eventbus.TypeAnswerDelta:
		p.answer.WriteString(ev.Text)
	case eventbus.TypeThinkingStart:
		p.untag.Start()
	case eventbus.TypeThinkingDelta:
		p.thinking.WriteString(p.untag.Delta(ev.Text))
	case eventbus.TypeReferences:
		if r, ok := ev.Payload.(eventbus.References); ok {
			p.references = r.Items
		}
	case eventbus.TypeUsage:
		if u, ok := ev.Payload.(eventbus.Usage); ok {
			p.usage = &u
		}
	case eventbus.TypeError:
		if e, ok := ev.Payload.(eventbus.Error); ok && p.errMsg == "" {
			p.errMsg = e.Message
		}
	}
}

// final is the message to save with the given status.
func (p *persister) final(status string) history.Final {
	f := history.Final{
		Status:     status,
		Content:    p.answer.String(),
		Thinking:   p.thinking.String(),
		References: p.references,
		Usage:      p.usage,
	}
	if status == history.StatusFailed {
		f.Error = p.errMsg
	}
	return f
}
