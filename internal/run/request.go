package run

import (
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/inspect"
	"github.com/chatpipe/chatpipe/pipeline"
)

// request is what differs between the chains a run starts: the session's
// answer, a stateless answer, one model's answer of several side by side.
// Everything else a chain gets, newChatManage attaches the same way for
// all of them.
type request struct {
	messageID string // the answer's message: the stream's, or one model's side by side
	query     string
	model     string                     // side by side: the model that answers
	messages  conversation.MessageReader // the history load_history reads
	emitter   eventbus.Emitter           // the run's guard, or one model's
	log       *zap.Logger                // the run's logger, with its ids
	inspect   *inspect.Recorder          // nil = inspector off
	noRetry   bool                       // no mid-stream retry (a reader that cannot withdraw output)
	noJobs    bool                       // no background jobs: another chain of the run starts them
}

// newChatManage is the one constructor of a run's request state. Every
// entry point (Start and Regenerate, StartStateless, side by side) gets
// the same services: models, knowledge, the response cache, remote tools,
// approvals and the run's background jobs. History summaries need a
// session, so a stateless run has none.
func (m *Manager) newChatManage(r *Run, setup *Setup, req request) *pipeline.ChatManage {
	cm := &pipeline.ChatManage{
		Logger:        req.log,
		TenantID:      r.TenantID,
		SessionID:     r.SessionID,
		MessageID:     req.messageID,
		UserMessageID: r.UserMessageID,
		Mode:          r.Mode,
		Query:         req.query,
		NoStreamRetry: req.noRetry,
		Model:         req.model,
		Emitter:       req.emitter,
		Messages:      req.messages,
		Models:        setup.Models,
		Knowledge:     m.opts.Knowledge,
		Cache:         m.opts.Cache,
		Approvals:     r.approvals,
		RemoteTools:   m.opts.RemoteTools,
		Inspect:       req.inspect,
	}
	if !req.noJobs {
		cm.Background = r.bg
	}
	if r.SessionID != "" {
		cm.Summaries = summaryStore{m.opts.History}
	}
	return cm
}

// own runs a run's body on its goroutine, which owns one wg slot, and
// tears the run down the same way whatever started it: the cluster lease
// held while body runs, then the span ended with body's status, the
// starter's AfterDone functions, the run off the live list, its context
// cancelled, and Done closed.
func (m *Manager) own(r *Run, log *zap.Logger, body func() (status string)) {
	defer m.wg.Done()
	defer r.end()
	status := ""
	defer func() {
		endSpan(r.span, status) // first: a run no longer active has ended its span
		r.runAfterDone()        // likewise, has freed what its starter holds for it
		m.mu.Lock()
		delete(m.active, r.StreamID)
		m.mu.Unlock()
		r.cancel(nil)
	}()
	if lease := m.acquireLease(r, log); lease != nil {
		defer lease.Release() // after the stream is finished in the store (defers run last-in first-out)
	}
	status = body()
}
