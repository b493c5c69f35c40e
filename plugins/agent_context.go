package plugins

import (
	"strings"

	"github.com/cloudwego/eino/schema"
)

// What the model reads in each cycle, as Onyx keeps a long agent run
// within its context: tool output beyond max_tool_context is cut, oldest
// first, and a reminder of the task ends the prompt once tools have run.
// Both apply to the cycle's prompt only; the run keeps every message whole,
// so each cycle decides afresh.

// droppedOutput replaces a tool result cut to fit the context.
const droppedOutput = "[This earlier tool output was removed to keep the context short; " +
	"call the tool again if you need it.]"

// prompt returns the messages of the next model call.
func (r *agentRun) prompt() []*schema.Message {
	msgs := fitToolOutput(r.msgs, r.p.cfg.MaxToolContext)
	if r.calls > 0 && r.p.cfg.Reminder != "" {
		msgs = append(msgs[:len(msgs):len(msgs)],
			schema.UserMessage(strings.ReplaceAll(r.p.cfg.Reminder, "{question}", r.cm.Query)))
	}
	return msgs
}

// fitToolOutput returns msgs with their tool results within budget
// characters: the oldest results are replaced by droppedOutput until the
// rest fit, except those of the last cycle (the tool messages at the
// end), which the model has not read yet and are kept whole. msgs is not
// changed; budget <= 0 keeps everything.
func fitToolOutput(msgs []*schema.Message, budget int) []*schema.Message {
	if budget <= 0 {
		return msgs
	}
	total := 0
	for _, m := range msgs {
		if m.Role == schema.Tool {
			total += len(m.Content)
		}
	}
	if total <= budget {
		return msgs
	}
	last := len(msgs) // the last cycle's results start here
	for last > 0 && msgs[last-1].Role == schema.Tool {
		last--
	}
	out := make([]*schema.Message, len(msgs))
	copy(out, msgs)
	for i := 0; i < last && total > budget; i++ {
		m := out[i]
		if m.Role != schema.Tool || len(m.Content) <= len(droppedOutput) {
			continue
		}
		cut := *m
		cut.Content = droppedOutput
		total -= len(m.Content) - len(cut.Content)
		out[i] = &cut
	}
	return out
}
