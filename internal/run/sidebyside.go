package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/inspect"
	"github.com/chatpipe/chatpipe/pipeline"
)

// Errors Start returns for a request naming models to compare.
var (
	// ErrBadModels: not 2 or 3 distinct models.
	ErrBadModels = errors.New("invalid models")
	// ErrUnknownModel: a named model is not configured.
	ErrUnknownModel = errors.New("unknown model")
)

// MaxModels is how many models one question may be answered by side by side.
const MaxModels = 3

// ReasonSomeModelsFailed is the reason of a completed stream on which some
// of the models answering side by side failed.
const ReasonSomeModelsFailed = "some_models_failed"

// checkModels validates the models a request compares.
func checkModels(setup *Setup, names []string) error {
	if len(names) < 2 || len(names) > MaxModels {
		return fmt.Errorf("%w: name 2 or 3 models to compare, not %d", ErrBadModels, len(names))
	}
	for i, name := range names {
		if slices.Contains(names[:i], name) {
			return fmt.Errorf("%w: %q is named twice", ErrBadModels, name)
		}
		if _, err := setup.Models.ChatModel(name); err != nil {
			return fmt.Errorf("%w %q", ErrUnknownModel, name)
		}
	}
	return nil
}

// part is one model's answer of a side-by-side run: its own request state,
// guard (its events placed with its model, its blocks balanced),
// persister (its answer only) and turn inspector record (nil when the
// inspector is off), saved as its own message.
type part struct {
	model     string
	messageID string
	cm        *pipeline.ChatManage
	guard     *guard
	persister *persister
	inspect   *inspect.Recorder
}

// startSideBySide is Start for a question several models answer at once,
// on one stream: the user's message and one assistant message per model
// are saved in one transaction; the stream is the first model's message.
// The caller holds a wg slot, which the run takes over on success.
func (m *Manager) startSideBySide(ctx context.Context, req StartRequest, sess history.Session, mode string,
	chain *pipeline.EventManager, setup *Setup) (*Run, error) {
	starter, ok := m.opts.History.(history.AnswersStarter)
	if !ok {
		return nil, errors.New("run: the history store cannot save several answers to one question")
	}
	userID := newID()
	ids := make([]string, len(req.Models))
	for i := range ids {
		ids[i] = newID()
	}
	userMsg, _, err := starter.StartTurnWithAnswers(ctx, sess.ID,
		history.Message{ID: userID, ParentID: req.ParentID, Role: history.RoleUser, Content: req.Question}, ids)
	if err != nil {
		return nil, err
	}
	streamID := ids[0]
	if err := m.opts.Streams.Create(ctx, streamID); err != nil {
		for _, id := range ids {
			m.failReserved(id, "The answer could not be started.")
		}
		return nil, err
	}

	info := Info{StreamID: streamID, SessionID: sess.ID, UserMessageID: userMsg.ID, Mode: mode, TenantID: sess.TenantID}
	span := m.startSpan(ctx, info)
	info.TraceID = traceID(span)
	log := withTrace(m.log.With(zap.String("stream_id", streamID), zap.String("session_id", sess.ID), zap.Strings("models", req.Models)), span)
	r, runCtx, g, p := m.launch(info, setup, log, true, span, nil)
	parts := make([]*part, len(req.Models))
	answers := make([]eventbus.ModelAnswer, len(req.Models))
	for i, name := range req.Models {
		pt := &part{model: name, messageID: ids[i], guard: newGuard(g.bus, g.redact), persister: p}
		pt.guard.model = name
		if i == 0 {
			p.fold.Model = name
		} else {
			pt.persister = newPersister(name, setup.PartialSaves.EveryDeltas)
			g.bus.Subscribe(pt.persister.handle, persistedTypes...)
		}
		if setup.Inspector.on(mode) && m.opts.Traces != nil {
			pt.inspect = inspect.NewRecorder(ids[i], mode, req.Question, info.TraceID)
			g.bus.Subscribe(partInspectorHandler(pt.inspect, name), inspectedTypes...)
		}
		// One chain starts the turn's background jobs (compaction): every
		// model reads the same history, which one summary covers.
		pt.cm = m.newChatManage(r, setup, request{messageID: ids[i], query: req.Question, model: name,
			messages: m.messagesBefore(userMsg), emitter: pt.guard, inspect: pt.inspect, noJobs: i > 0,
			log: log.With(zap.String("message_id", ids[i]), zap.String("model", name))})
		parts[i] = pt
		answers[i] = eventbus.ModelAnswer{Model: name, MessageID: ids[i]}
	}
	g.emitInternal(eventbus.Of(eventbus.TypeStreamStarted, eventbus.StreamStarted{
		SessionID: sess.ID, MessageID: streamID, UserMessageID: userMsg.ID, Mode: mode, Models: answers, TraceID: info.TraceID,
	}))
	if setup.Titles.Enabled && sess.TitleSource == history.TitleDefault {
		m.titleAfterFirstToken(r, g, setup.Titles, setup.Models, sess.ID, req.Question)
	}
	go m.executeSideBySide(runCtx, r, chain, parts, g, log)
	return r, nil
}

// executeSideBySide runs every model's chain at once and finishes the
// stream when all have ended; it owns one wg slot. One model failing does
// not stop the others; a stop stops all.
func (m *Manager) executeSideBySide(ctx context.Context, r *Run, chain *pipeline.EventManager, parts []*part,
	g *guard, log *zap.Logger) {
	m.own(r, log, func() string { return m.executeParts(ctx, r, chain, parts, g, log) })
}

// executeParts runs the models' chains, finishes the stream and returns
// its status.
func (m *Manager) executeParts(ctx context.Context, r *Run, chain *pipeline.EventManager, parts []*part,
	g *guard, log *zap.Logger) string {
	statuses := make([]string, len(parts))
	reasons := make([]string, len(parts))
	var wg sync.WaitGroup
	for i, pt := range parts {
		wg.Go(func() { statuses[i], reasons[i] = m.runPart(ctx, chain, pt, r.partial, r.inspectMax, log) })
	}
	wg.Wait()

	status, reason := eventbus.StatusFailed, reasons[0]
	switch {
	case slices.Contains(statuses, eventbus.StatusStopped):
		status, reason = outcome(ctx, &pipeline.PluginError{Code: pipeline.CodeCanceled})
	case !slices.Contains(statuses, eventbus.StatusFailed):
		status, reason = eventbus.StatusCompleted, ""
	case slices.Contains(statuses, eventbus.StatusCompleted):
		status, reason = eventbus.StatusCompleted, ReasonSomeModelsFailed
	}
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	if r.startTitle != nil {
		r.startTitle()
	}
	r.bg.awaitJobs(ctx, r.jobsWait)
	g.finish(eventbus.Finished{Status: status, Reason: reason, MessageID: r.StreamID})
	if err := m.opts.Streams.Finish(saveCtx, r.StreamID); err != nil {
		log.Error("finishing the stream in the store failed", zap.Error(err))
	}
	return status
}

// runPart runs one model's chain, closes its blocks and saves its answer
// as its own message, exactly once, then its turn inspector record.
func (m *Manager) runPart(ctx context.Context, chain *pipeline.EventManager, pt *part, ps PartialSaves, inspectMax int,
	log *zap.Logger) (string, string) {
	log = log.With(zap.String("model", pt.model), zap.String("message_id", pt.messageID))
	stopPartial := m.startPartialSaves(pt.messageID, pt.persister, ps, log)
	defer stopPartial()
	perr := m.runChain(ctx, chain, pt.cm, log)
	status, reason := outcome(ctx, perr)
	logCause(log, status, perr)
	pt.guard.closeOpen() // blocks first, then the error: as every ending
	if status == eventbus.StatusFailed && perr != nil {
		pt.guard.emitInternal(eventbus.Of(eventbus.TypeError, errorPayload(ctx, perr)))
	}
	stopPartial()
	f := pt.persister.final(status)
	f.Model = cmp.Or(pt.cm.AnswerModel, pt.model)
	m.saveAnswer(ctx, pt.messageID, f, pt.guard, log)
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	m.saveRecord(saveCtx, pt.inspect, pt.messageID, inspectMax, status, log)
	return status, reason
}
