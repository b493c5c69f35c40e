package run

import (
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
)

// streamLogger is the bus subscriber that writes a stream's lifecycle to
// the log: one info line when the stream finishes (ids, mode, status,
// timings, token counts), details at debug. It never logs prompt or answer
// text.
type streamLogger struct {
	log     *zap.Logger
	start   time.Time
	mode    string
	usage   eventbus.Usage
	errCode string
}

// loggedTypes are the events the logger looks at; it does not subscribe to
// deltas (the seq of the last event counts them).
var loggedTypes = []eventbus.Type{
	eventbus.TypeStreamStarted, eventbus.TypeStage, eventbus.TypeError,
	eventbus.TypeUsage, eventbus.TypeStreamFinished,
}

func (l *streamLogger) handle(ev *eventbus.Event) {
	switch p := ev.Payload.(type) {
	case eventbus.StreamStarted:
		l.mode = p.Mode
		l.log.Debug("stream started", zap.String("session_id", p.SessionID), zap.String("mode", p.Mode))
	case eventbus.Stage:
		if p.Status != eventbus.StageStarted {
			l.log.Debug("stage", zap.String("stage", p.Name), zap.String("status", p.Status),
				zap.Int64("elapsed_ms", p.ElapsedMS))
		}
	case eventbus.Error:
		if l.errCode == "" {
			l.errCode = p.Code
		}
		l.log.Warn("stream error", zap.String("code", p.Code), zap.String("stage", p.Stage),
			zap.Bool("retryable", p.Retryable))
	case eventbus.Usage:
		l.usage = p
	case eventbus.Finished:
		l.log.Info("stream finished",
			zap.String("mode", l.mode),
			zap.String("status", p.Status),
			zap.String("reason", p.Reason),
			zap.String("error_code", l.errCode),
			zap.Int64("events", ev.Seq),
			zap.Int64("duration_ms", time.Since(l.start).Milliseconds()),
			zap.Int64("ttft_ms", l.usage.TTFTMS),
			zap.Int("prompt_tokens", l.usage.PromptTokens),
			zap.Int("completion_tokens", l.usage.CompletionTokens),
			zap.Int("reasoning_tokens", l.usage.ReasoningTokens),
			zap.Bool("usage_estimated", l.usage.Estimated))
	}
}
