package run

import (
	"cmp"
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/history"
)

// StatelessRequest is a question asked with its history in hand, by a
// client that keeps the conversation itself (the stateless chat API, the
// OpenAI-compatible API).
type StatelessRequest struct {
	TenantID string                 // the caller's tenant: scopes the knowledge search
	Mode     string                 // "" = the default mode
	History  []conversation.Message // earlier turns, oldest first
	Question string
	// NoStreamRetry turns mid-stream retry off (pipeline.ChatManage): the
	// reader forwards output it cannot take back.
	NoStreamRetry bool
}

// StartStateless starts a generation that persists nothing: no session, no
// message rows. Everything else is Start's: the stream store (so readers
// replay and resume), the bus and its subscribers, the guard, a context of
// its own and the cancel registry (so Stop works). The request's history
// is what load_history reads. The run's StreamID names the stream;
// stream.started carries no session.
func (m *Manager) StartStateless(ctx context.Context, req StatelessRequest) (*Run, error) {
	setup := m.opts.Setup()
	mode := cmp.Or(req.Mode, setup.DefaultMode)
	chain, ok := setup.Chains[mode]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownMode, mode)
	}
	if err := m.admit(); err != nil {
		return nil, err
	}
	id := newID()
	if err := m.opts.Streams.Create(ctx, id); err != nil {
		m.wg.Done()
		return nil, err
	}

	tenant := cmp.Or(req.TenantID, history.DefaultTenant)
	info := Info{StreamID: id, Mode: mode, TenantID: tenant}
	span := m.startSpan(ctx, info)
	info.TraceID = traceID(span)
	log := withTrace(m.log.With(zap.String("stream_id", id), zap.Bool("stateless", true)), span)
	r, runCtx, g, p := m.launch(info, setup, log, false, span, nil)
	cm := m.newChatManage(r, setup, request{messageID: id, query: req.Question, messages: statelessHistory(req.History),
		emitter: g, log: log, noRetry: req.NoStreamRetry})
	g.emitInternal(eventbus.Of(eventbus.TypeStreamStarted, eventbus.StreamStarted{MessageID: id, Mode: mode, TraceID: info.TraceID}))
	go m.execute(runCtx, r, chain, cm, g, p, log)
	return r, nil
}

// statelessHistory serves a request's own history to load_history,
// whatever session and question it asks about.
type statelessHistory []conversation.Message

// Branch implements conversation.MessageReader.
func (h statelessHistory) Branch(_ context.Context, _, _ string, limit int) ([]conversation.Message, error) {
	if limit > 0 && len(h) > limit {
		h = h[len(h)-limit:]
	}
	out := make([]conversation.Message, 0, len(h))
	for _, m := range h {
		if m.Status == "" {
			m.Status = history.StatusCompleted
		}
		out = append(out, m)
	}
	return out, nil
}
