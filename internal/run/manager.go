// Package run owns the lifecycle of a generation: it reserves the
// assistant message, starts the mode's chain on a context of its own (not
// the HTTP request's, so a client that leaves does not stop the answer),
// keeps the cancel registry that stop requests use, and finishes every
// stream exactly once — saved message first, then stream.finished.
package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/chatmodel"
	"github.com/chatpipe/chatpipe/internal/cluster"
	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/inspect"
	"github.com/chatpipe/chatpipe/internal/jobs"
	"github.com/chatpipe/chatpipe/internal/remotetool"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/internal/secrets"
	"github.com/chatpipe/chatpipe/internal/sharedcache"
	"github.com/chatpipe/chatpipe/internal/stream"
	"github.com/chatpipe/chatpipe/internal/telemetry"
	"github.com/chatpipe/chatpipe/internal/think"
	"github.com/chatpipe/chatpipe/pipeline"
)

// Causes a run's context is cancelled with.
var (
	// ErrStopped: a user asked to stop the generation.
	ErrStopped = errors.New("stopped by user")
	// ErrShutdown: the server is shutting down and the grace period ended.
	ErrShutdown = errors.New("server shutting down")
	// ErrTooLong: the generation ran past stream.max_duration.
	ErrTooLong = errors.New("generation exceeded its maximum duration")
	// ErrLeaseLost: another replica declared this generation lost (its
	// lease expired, e.g. while Redis was unreachable) and ended its stream.
	ErrLeaseLost = errors.New("generation lease lost")
)

// Errors Start returns for requests it refuses.
var (
	ErrUnknownMode  = errors.New("unknown chat mode")
	ErrShuttingDown = errors.New("server is shutting down")
	// ErrNotAnswer: Regenerate was given a message that is not an answer.
	ErrNotAnswer = errors.New("not an assistant message")
)

// Setup is what one configuration snapshot gives new runs. A run reads it
// once, at its start, and keeps it to the end.
type Setup struct {
	Chains      map[string]*pipeline.EventManager
	DefaultMode string
	Models      chatmodel.Source
	MaxDuration time.Duration
	// Redact removes this configuration's secrets from what users see
	// (error events, stage details, saved errors); nil = nothing to hide.
	Redact *secrets.Redactor
	// PartialSaves writes answers to the history store while they stream.
	PartialSaves PartialSaves
	// Inspector records what each stage did, saved with the answer.
	Inspector InspectorSetup
	// CaptureContent lets prompt and answer text into spans.
	CaptureContent bool
	// Titles name a session after its first question (title.go).
	Titles Titles
	// JobsWait is how long a finished answer's stream stays open for the
	// background jobs of its run (their events); 0 = never wait.
	JobsWait time.Duration
}

// Observer is attached to every new stream's bus (metrics, tracing).
type Observer func(bus *eventbus.Bus, info Info)

// Info identifies a run.
type Info struct {
	StreamID      string // also the assistant message id
	SessionID     string // "" for a stateless run
	UserMessageID string
	Mode          string
	TenantID      string // whose run it is: stop and resume of a stateless run check it
	TraceID       string // the OpenTelemetry trace of the run ("" when none)
}

// Options configure a Manager.
type Options struct {
	Setup     func() *Setup // the current snapshot
	History   history.Store
	Knowledge retrieval.Knowledge // nil = no knowledge base
	Cache     sharedcache.Store   // nil = no cache: response_cache passes through
	Streams   stream.Store
	Logger    *zap.Logger
	Observers []Observer
	// Cluster shares live generations with other replicas (stop from any
	// replica, generator liveness); nil for a single server.
	Cluster *cluster.Coordinator
	// RemoteTools are MCP servers' tools (nil = none configured).
	RemoteTools remotetool.Source
	// Tracer starts each generation's span (nil = no tracing).
	Tracer trace.Tracer
	// Traces saves the turn inspector's records (nil = not saved).
	Traces history.TraceStore
	// Jobs runs the model jobs that follow a turn (titles, compaction);
	// nil = none run. Its owner closes it after Shutdown.
	Jobs *jobs.Runner
}

// Manager starts runs and tracks the live ones.
type Manager struct {
	opts Options
	log  *zap.Logger

	mu      sync.Mutex
	active  map[string]*Run
	closing bool
	wg      sync.WaitGroup
	// turns are the turns being saved while their answer already runs
	// (see startSaving), by answer id; guarded by mu.
	turns map[string]*turnSave

	saverOnce sync.Once
	saver     *partialSaver // writes every live run's partial answer (partial.go)
}

// Run is a live generation.
type Run struct {
	Info
	cancel    context.CancelCauseFunc
	done      chan struct{}
	persist   bool         // save the answer to the history store at the end (false: stateless)
	partial   PartialSaves // and while it streams, when persist
	approvals *approvals   // tool calls waiting for the user's decision

	doneMu    sync.Mutex
	ended     bool       // done is closed
	afterDone []func()   // called once done is closed
	span      trace.Span // the generation's span, ended when its stream is finished
	// inspect gathers the turn inspector's record (nil = off), saved
	// bounded to inspectMax bytes.
	inspect    *inspect.Recorder
	inspectMax int
	bg         *background // model jobs the run started (title, compaction)
	// startTitle starts the session's title job, once (nil: no title).
	startTitle func()
	jobsWait   time.Duration
}

// Done is closed when the run has saved its message and finished its stream.
func (r *Run) Done() <-chan struct{} { return r.done }

// AfterDone calls f once the run is done: at once, in the caller, if it
// is already; otherwise in the run's goroutine as it ends, before the run
// leaves the manager's live list and before Done is closed. It spares a
// caller a goroutine per run waiting on Done.
func (r *Run) AfterDone(f func()) {
	r.doneMu.Lock()
	if r.ended {
		r.doneMu.Unlock()
		f()
		return
	}
	r.afterDone = append(r.afterDone, f)
	r.doneMu.Unlock()
}

// runAfterDone calls the AfterDone functions, once. The run calls it
// before it leaves the live list, so whoever no longer finds the run, or
// sees Done closed, sees their effects (a freed concurrency slot, say).
func (r *Run) runAfterDone() {
	r.doneMu.Lock()
	r.ended = true
	fs := r.afterDone
	r.afterDone = nil
	r.doneMu.Unlock()
	for _, f := range fs {
		f()
	}
}

// end closes done (after runAfterDone, which it calls in case the run
// ended before reaching the live list's removal).
func (r *Run) end() {
	r.runAfterDone()
	close(r.done)
}

// NewManager returns a manager.
func NewManager(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &Manager{opts: opts, log: opts.Logger, active: map[string]*Run{}, turns: map[string]*turnSave{}}
}

// StartRequest is a question to answer in a session.
type StartRequest struct {
	TenantID  string // the caller's tenant: the session must be theirs
	SessionID string
	Question  string
	Mode      string // "" = the session's mode, else the default mode
	// Models, when set, names 2 or 3 models that answer side by side on
	// one stream, each saved as its own message (see StreamStarted.Models).
	Models []string
	// ParentID places the question in the session's tree: "" after the
	// current leaf, history.Root as a new first question, else after that
	// answer (an edited question). See history.Store.StartTurn.
	ParentID string
}

// RegenerateRequest asks for a new answer to the question an earlier
// answer (completed, stopped or failed) answered; the new answer is its
// sibling and becomes the session's current leaf.
type RegenerateRequest struct {
	TenantID  string // the caller's tenant: the message must be theirs
	MessageID string // the earlier answer
	Mode      string // "" = the session's mode, else the default mode
}

// Start saves the question, reserves the assistant message and starts the
// generation. The returned run's StreamID can be read from the stream
// store at once. ctx only bounds the setup; the generation runs on.
func (m *Manager) Start(ctx context.Context, req StartRequest) (*Run, error) {
	setup := m.opts.Setup()
	sess, err := m.tenantSession(ctx, req.TenantID, req.SessionID)
	if err != nil {
		return nil, err
	}
	mode, chain, err := pickMode(setup, req.Mode, sess)
	if err != nil {
		return nil, err
	}
	if req.Models != nil {
		if err := checkModels(setup, req.Models); err != nil {
			return nil, err
		}
	}
	return m.withSlot(func() (*Run, error) {
		if req.Models != nil {
			return m.startSideBySide(ctx, req, sess, mode, chain, setup)
		}
		userID, assistantID := newID(), newID()
		user := history.Message{ID: userID, ParentID: req.ParentID, Role: history.RoleUser, Content: req.Question}
		if req.ParentID == history.Root || (req.ParentID == "" && sess.CurrentLeaf == "") {
			return m.beginWhileSaving(ctx, setup, sess, mode, chain, user, assistantID)
		}
		userMsg, _, err := m.opts.History.StartTurn(ctx, sess.ID, user, assistantID)
		if err != nil {
			return nil, err
		}
		return m.begin(ctx, setup, sess, mode, chain, userMsg, assistantID)
	})
}

// turnSave is a turn being saved (StartTurn) while its answer runs.
type turnSave struct {
	done chan struct{} // closed once the save returned
	err  error         // its error; read after done
}

// beginWhileSaving starts the answer to a question that starts a branch
// (a new session's first question, or a new root) while the turn is
// being saved, instead of after: under a burst of new conversations the
// saves queue for SQLite's one writer, and the model call need not wait
// in that queue. Nothing before the question is read from the store, so
// the answer needs nothing of the save but the rows its own saves write:
// every write of the run (partial saves, the final save, failReserved)
// waits for the turn first (waitTurn) and is skipped when the turn was
// not saved. Start still returns only once the turn is saved, with its
// error when it was not (then the started run is cancelled and saves
// nothing), so a caller sees the same outcomes as before.
//
// Were another question saved into the same session in between (two
// first questions at once), the store places this one after the other's
// answer while the run was told it is a root: it answers without the
// other turn, whose answer is still streaming anyway.
func (m *Manager) beginWhileSaving(ctx context.Context, setup *Setup, sess history.Session, mode string,
	chain *pipeline.EventManager, user history.Message, assistantID string) (*Run, error) {
	ts := &turnSave{done: make(chan struct{})}
	m.mu.Lock()
	m.turns[assistantID] = ts
	m.mu.Unlock()
	forget := func() {
		m.mu.Lock()
		delete(m.turns, assistantID)
		m.mu.Unlock()
	}
	go func() {
		defer close(ts.done)
		_, _, ts.err = m.opts.History.StartTurn(ctx, sess.ID, user, assistantID)
	}()
	// The question as the store saves it: a root has no parent.
	q := history.Message{ID: user.ID, SessionID: sess.ID, Role: history.RoleUser, Content: user.Content,
		Status: history.StatusCompleted}
	r, err := m.begin(ctx, setup, sess, mode, chain, q, assistantID)
	<-ts.done
	if err != nil {
		forget()
		return nil, cmp.Or(ts.err, err)
	}
	r.AfterDone(forget)
	if ts.err != nil {
		r.cancel(ts.err)
		return r, ts.err // the run owns its slot (withSlot)
	}
	return r, nil
}

// waitTurn waits until the turn of answer id is saved when the answer
// started while it was being saved (beginWhileSaving), and returns the
// save's error; nil at once otherwise.
func (m *Manager) waitTurn(id string) error {
	m.mu.Lock()
	ts := m.turns[id]
	m.mu.Unlock()
	if ts == nil {
		return nil
	}
	<-ts.done
	return ts.err
}

// Regenerate reserves a new answer to the question an earlier answer
// answered and starts its generation, as Start does. ErrNotFound for a
// message that is not the tenant's, ErrNotAnswer for a question.
func (m *Manager) Regenerate(ctx context.Context, req RegenerateRequest) (*Run, error) {
	setup := m.opts.Setup()
	old, err := m.opts.History.GetMessage(ctx, req.MessageID)
	if err != nil {
		return nil, err
	}
	sess, err := m.tenantSession(ctx, req.TenantID, old.SessionID)
	if err != nil {
		return nil, fmt.Errorf("message %q: %w", req.MessageID, history.ErrNotFound)
	}
	if old.Role != history.RoleAssistant {
		return nil, fmt.Errorf("message %q: %w", req.MessageID, ErrNotAnswer)
	}
	question, err := m.opts.History.GetMessage(ctx, old.ParentID)
	if err != nil {
		return nil, fmt.Errorf("the question of message %q: %w", req.MessageID, err)
	}
	mode, chain, err := pickMode(setup, req.Mode, sess)
	if err != nil {
		return nil, err
	}
	return m.withSlot(func() (*Run, error) {
		assistantID := newID()
		if _, err := m.opts.History.StartAnswer(ctx, sess.ID, question.ID, assistantID); err != nil {
			return nil, err
		}
		return m.begin(ctx, setup, sess, mode, chain, question, assistantID)
	})
}

// tenantSession loads a session, ErrNotFound unless it is the tenant's.
func (m *Manager) tenantSession(ctx context.Context, tenantID, sessionID string) (history.Session, error) {
	sess, err := m.opts.History.GetSession(ctx, sessionID)
	if err != nil {
		return sess, err
	}
	if tenant := cmp.Or(tenantID, history.DefaultTenant); sess.TenantID != tenant {
		return sess, fmt.Errorf("session %q: %w", sessionID, history.ErrNotFound)
	}
	return sess, nil
}

// pickMode resolves the mode a run uses: the requested one, else the
// session's, else the default; ErrUnknownMode when it has no chain.
func pickMode(setup *Setup, requested string, sess history.Session) (string, *pipeline.EventManager, error) {
	mode := cmp.Or(requested, sess.Mode, setup.DefaultMode)
	chain, ok := setup.Chains[mode]
	if !ok {
		return "", nil, fmt.Errorf("%w %q", ErrUnknownMode, mode)
	}
	return mode, chain, nil
}

// withSlot runs start holding a wg slot, which the started run takes
// over; a start that fails before starting a run gives it back. A start
// may fail after starting its run (beginWhileSaving): it returns the run
// with the error, and the run, cancelled, still owns the slot.
func (m *Manager) withSlot(start func() (*Run, error)) (*Run, error) {
	if err := m.admit(); err != nil {
		return nil, err
	}
	r, err := start()
	if err != nil {
		if r == nil {
			m.wg.Done()
		}
		return nil, err
	}
	return r, nil
}

// begin creates the stream of a reserved answer to the saved question q
// and starts its chain.
func (m *Manager) begin(ctx context.Context, setup *Setup, sess history.Session, mode string, chain *pipeline.EventManager,
	q history.Message, assistantID string) (*Run, error) {
	userMsgID, question := q.ID, q.Content
	if err := m.opts.Streams.Create(ctx, assistantID); err != nil {
		m.failReserved(assistantID, "The answer could not be started.")
		return nil, err
	}

	info := Info{StreamID: assistantID, SessionID: sess.ID, UserMessageID: userMsgID, Mode: mode, TenantID: sess.TenantID}
	span := m.startSpan(ctx, info)
	info.TraceID = traceID(span)
	log := withTrace(m.log.With(zap.String("stream_id", assistantID), zap.String("session_id", sess.ID)), span)
	var rec *inspect.Recorder
	if setup.Inspector.on(mode) && m.opts.Traces != nil {
		rec = inspect.NewRecorder(assistantID, mode, question, info.TraceID)
	}
	r, runCtx, g, p := m.launch(info, setup, log, true, span, rec)
	cm := m.newChatManage(r, setup, request{messageID: assistantID, query: question, messages: m.messagesBefore(q),
		emitter: g, log: log, inspect: rec})
	g.emitInternal(eventbus.Of(eventbus.TypeStreamStarted, eventbus.StreamStarted{
		SessionID: sess.ID, MessageID: assistantID, UserMessageID: userMsgID, Mode: mode, TraceID: info.TraceID,
	}))
	if setup.Titles.Enabled && sess.TitleSource == history.TitleDefault {
		m.titleAfterFirstToken(r, g, setup.Titles, setup.Models, sess.ID, question)
	}
	go m.execute(runCtx, r, chain, cm, g, p, log)
	return r, nil
}

// admit takes a wg slot for a new run, or refuses when shutting down. The
// caller releases the slot itself if the run then fails to start.
func (m *Manager) admit() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return ErrShuttingDown
	}
	m.wg.Add(1) // owned by the run goroutine from here on
	return nil
}

// launch wires a new stream's bus (recorder, persister, logger,
// observers; the bus stamps each event's seq before any of them sees it),
// gives the run its own cancellable context and registers it where Stop
// finds it. The stream must already exist in the store.
//
// span is the generation's span (the run's context carries it, so every
// span of the chain joins the request's trace); turn, when set, is
// subscribed to gather the turn inspector's record.
func (m *Manager) launch(info Info, setup *Setup, log *zap.Logger, persist bool, span trace.Span,
	turn *inspect.Recorder) (*Run, context.Context, *guard, *persister) {
	bus := eventbus.NewBus(info.StreamID)
	rec := stream.NewRecorder(m.opts.Streams, info.StreamID, func(err error) {
		log.Error("stream store append failed; resuming this stream may need a resync", zap.Error(err))
	})
	bus.Subscribe(rec.Handle)
	p := newPersister("", setup.PartialSaves.EveryDeltas)
	bus.Subscribe(p.handle, persistedTypes...)
	sl := &streamLogger{log: log, start: time.Now()}
	bus.Subscribe(sl.handle, loggedTypes...)
	if turn != nil {
		bus.Subscribe(inspectorHandler(turn), inspectedTypes...)
	}
	for _, o := range m.opts.Observers {
		o(bus, info)
	}

	base := telemetry.WithCaptureContent(trace.ContextWithSpan(context.Background(), span), setup.CaptureContent)
	runCtx, cancel := context.WithCancelCause(base)
	if setup.MaxDuration > 0 {
		var stopTimer context.CancelFunc
		runCtx, stopTimer = context.WithTimeoutCause(runCtx, setup.MaxDuration, ErrTooLong)
		base := cancel
		cancel = func(cause error) { base(cause); stopTimer() }
	}
	g := newGuard(bus, setup.Redact)
	r := &Run{Info: info, cancel: cancel, done: make(chan struct{}), persist: persist, approvals: newApprovals(),
		span: span, inspect: turn, inspectMax: setup.Inspector.MaxBytes,
		bg: &background{runner: m.opts.Jobs, g: g, log: log}, jobsWait: setup.JobsWait}
	if persist {
		r.partial = setup.PartialSaves
	}
	m.mu.Lock()
	m.active[info.StreamID] = r
	m.mu.Unlock()
	return r, runCtx, g, p
}

// execute runs the chain and finishes the stream; it owns one wg slot.
func (m *Manager) execute(ctx context.Context, r *Run, chain *pipeline.EventManager, cm *pipeline.ChatManage,
	g *guard, p *persister, log *zap.Logger) {
	m.own(r, log, func() string { return m.executeChain(ctx, r, chain, cm, g, p, log) })
}

// executeChain runs one answer's chain, saves it and finishes the stream,
// and returns its status.
func (m *Manager) executeChain(ctx context.Context, r *Run, chain *pipeline.EventManager, cm *pipeline.ChatManage,
	g *guard, p *persister, log *zap.Logger) string {
	stopPartial := m.startPartialSaves(r.StreamID, p, r.partial, log)
	defer stopPartial()

	perr := m.runChain(ctx, chain, cm, log)
	return m.endChain(ctx, r, cm, g, p, log, perr, stopPartial)
}

// endChain ends an answer whose chain returned perr: closes its blocks,
// saves it, finishes the stream, and returns its status. It is apart from
// executeChain, under whose frame the generation goroutine rests while
// the model streams (see handler.streamTail).
func (m *Manager) endChain(ctx context.Context, r *Run, cm *pipeline.ChatManage, g *guard, p *persister,
	log *zap.Logger, perr *pipeline.PluginError, stopPartial func()) string {
	status, reason := outcome(ctx, perr)
	logCause(log, status, perr)
	// Blocks close before the error, as when a plugin ends its own call:
	// every ending (here, on another replica for a lost generation) reads
	// the same — closed blocks, error, stream.finished.
	g.closeOpen()
	if status == eventbus.StatusFailed && perr != nil {
		g.emitInternal(eventbus.Of(eventbus.TypeError, errorPayload(ctx, perr)))
	}

	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	stopPartial() // no partial write after this point; the store's guard would refuse it anyway
	if r.persist && m.waitTurn(r.StreamID) == nil {
		f := p.final(status)
		f.Model = cm.AnswerModel
		m.saveAnswer(ctx, r.StreamID, f, g, log)
		m.saveInspection(saveCtx, r, status, log)
	}
	if r.startTitle != nil {
		r.startTitle() // no token went out: the title is written now
	}
	r.bg.awaitJobs(ctx, r.jobsWait) // the answer is saved: only stream.finished waits for their events
	g.finish(eventbus.Finished{Status: status, Reason: reason, MessageID: r.StreamID})
	if err := m.opts.Streams.Finish(saveCtx, r.StreamID); err != nil {
		log.Error("finishing the stream in the store failed", zap.Error(err))
	}
	return status
}

// saveTimeout bounds saving an answer and finishing its stream, which
// happen whatever ended the run.
const saveTimeout = 15 * time.Second

// saveAnswer saves an assistant message's final state (exactly once: the
// store refuses a second finish); a failure is logged and told to the
// stream's readers through g.
func (m *Manager) saveAnswer(ctx context.Context, id string, f history.Final, g *guard, log *zap.Logger) {
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	err := m.opts.History.FinishMessage(saveCtx, id, f)
	switch {
	case err == nil:
	case errors.Is(err, history.ErrNotFound):
		log.Info("answer not saved: its session was deleted")
	default:
		log.Error("saving the answer failed", zap.Error(err))
		g.emitInternal(eventbus.Of(eventbus.TypeError, eventbus.Error{
			Code: "save_failed", Message: "The answer could not be saved; it may be missing from the history.",
		}))
	}
}

// acquireLease registers the run with the cluster so any replica can stop
// it and notice if this one dies. Without Redis the run goes on alone.
func (m *Manager) acquireLease(r *Run, log *zap.Logger) *cluster.Lease {
	if m.opts.Cluster == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	lease, err := m.opts.Cluster.Acquire(ctx, r.StreamID, func(lost bool) {
		if lost {
			r.cancel(ErrLeaseLost)
		} else {
			r.cancel(ErrStopped)
		}
	})
	if err != nil {
		log.Warn("no cluster lease: this answer can only be stopped on this replica", zap.Error(err))
		return nil
	}
	r.approvals.attach(lease) // decisions posted to other replicas arrive through the lease
	return lease
}

// StopAnywhere stops a generation on whichever replica runs it and reports
// whether a live one was found.
func (m *Manager) StopAnywhere(ctx context.Context, streamID string) (bool, error) {
	if m.Stop(streamID) {
		return true, nil
	}
	if m.opts.Cluster == nil {
		return false, nil
	}
	return m.opts.Cluster.RequestStop(ctx, streamID)
}

// runChain executes the chain, turning a panic in any plugin into a
// PluginError so the stream still ends properly.
func (m *Manager) runChain(ctx context.Context, chain *pipeline.EventManager, cm *pipeline.ChatManage,
	log *zap.Logger) (perr *pipeline.PluginError) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("plugin panicked", zap.Any("panic", v), zap.ByteString("stack", debug.Stack()))
			perr = &pipeline.PluginError{Code: pipeline.CodeInternal,
				Message: "An internal error interrupted this answer.", Err: fmt.Errorf("panic: %v", v)}
		}
	}()
	return chain.Execute(ctx, cm)
}

// outcome decides the terminal status from how the chain ended and why
// the context (if at all) was cancelled.
func outcome(ctx context.Context, perr *pipeline.PluginError) (status, reason string) {
	cause := context.Cause(ctx)
	switch {
	case perr == nil:
		return eventbus.StatusCompleted, ""
	case errors.Is(cause, ErrStopped):
		return eventbus.StatusStopped, "user"
	case errors.Is(cause, ErrShutdown):
		return eventbus.StatusStopped, "shutdown"
	case errors.Is(cause, ErrTooLong):
		return eventbus.StatusFailed, pipeline.CodeTimeout
	case errors.Is(cause, ErrLeaseLost):
		return eventbus.StatusFailed, ReasonGeneratorLost
	default:
		return eventbus.StatusFailed, perr.Code
	}
}

// logCause logs why a run did not complete, in full: the provider's own
// message and PluginError.Err, the cause users see only in the short form
// of the error event (the logger's core redacts configured secrets from
// it). A failure is an error; a stop, expected, is debug.
func logCause(log *zap.Logger, status string, perr *pipeline.PluginError) {
	if perr == nil {
		return
	}
	fields := []zap.Field{zap.String("code", perr.Code), zap.String("stage", string(perr.Stage)),
		zap.String("message", perr.Message)}
	if perr.Err != nil {
		fields = append(fields, zap.Error(perr.Err))
	}
	switch status {
	case eventbus.StatusFailed:
		log.Error("answer failed", fields...)
	case eventbus.StatusStopped:
		if perr.Err != nil {
			log.Debug("generation stopped", fields...)
		}
	}
}

func errorPayload(ctx context.Context, perr *pipeline.PluginError) eventbus.Error {
	if errors.Is(context.Cause(ctx), ErrLeaseLost) {
		return eventbus.Error{Code: ReasonGeneratorLost, Stage: string(perr.Stage), Retryable: true,
			Message: "This answer was ended: the server generating it lost contact with the other servers."}
	}
	if errors.Is(context.Cause(ctx), ErrTooLong) {
		return eventbus.Error{Code: pipeline.CodeTimeout, Stage: string(perr.Stage),
			Message: "The answer took longer than the configured maximum and was ended."}
	}
	msg := perr.Message
	if msg == "" {
		msg = "The answer could not be completed."
	}
	return eventbus.Error{Code: perr.Code, Message: msg, Stage: string(perr.Stage), Retryable: perr.Retryable}
}

// failReserved marks a reserved message failed when its run never started.
func (m *Manager) failReserved(id, msg string) {
	if m.waitTurn(id) != nil {
		return // the turn was not saved: there is nothing to mark
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.opts.History.FinishMessage(ctx, id, history.Final{Status: history.StatusFailed, Error: msg}); err != nil {
		m.log.Error("marking an unstarted answer failed", zap.String("message_id", id), zap.Error(err))
	}
}

// Stop cancels a live run; it reports whether the run was live here.
func (m *Manager) Stop(streamID string) bool {
	m.mu.Lock()
	r, ok := m.active[streamID]
	m.mu.Unlock()
	if ok {
		r.cancel(ErrStopped)
	}
	return ok
}

// StopSession cancels every live run of a session (it is being deleted),
// wherever it runs: those of this replica at once, and with a cluster,
// every answer of the session still streaming in the history store is
// sent through the cluster's stop path to the replica generating it.
// Failures are logged: the session is deleted anyway, and an answer that
// could not be stopped ends by itself with nowhere to be saved.
func (m *Manager) StopSession(ctx context.Context, sessionID string) {
	here := map[string]bool{}
	m.mu.Lock()
	for id, r := range m.active {
		if r.SessionID == sessionID {
			r.cancel(ErrStopped)
			here[id] = true
		}
	}
	m.mu.Unlock()
	if m.opts.Cluster == nil {
		return
	}
	msgs, err := m.opts.History.ListMessages(ctx, sessionID)
	if err != nil {
		m.log.Warn("stopping a deleted session's answers on other replicas failed", zap.String("session_id", sessionID), zap.Error(err))
		return
	}
	for _, msg := range msgs {
		// Side-by-side answers share the first one's stream; asking to stop
		// the others finds no generation and costs one lookup.
		if msg.Role != history.RoleAssistant || msg.Status != history.StatusStreaming || here[msg.ID] {
			continue
		}
		if _, err := m.opts.Cluster.RequestStop(ctx, msg.ID); err != nil {
			m.log.Warn("stopping a deleted session's answer on another replica failed",
				zap.String("session_id", sessionID), zap.String("stream_id", msg.ID), zap.Error(err))
		}
	}
}

// Lookup returns the live run of a stream, if it runs here.
func (m *Manager) Lookup(streamID string) (*Run, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.active[streamID]
	return r, ok
}

// Active is the number of live runs.
func (m *Manager) Active() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.active)
}

// Shutdown refuses new runs, lets live ones finish until ctx ends, then
// stops the rest (their partial answers are saved as stopped) and waits
// for every run to finish its stream.
func (m *Manager) Shutdown(ctx context.Context) {
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	m.mu.Lock()
	for _, r := range m.active {
		r.cancel(ErrShutdown)
	}
	m.mu.Unlock()
	<-done
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// messageReader adapts the history store to conversation.MessageReader.
type messageReader struct {
	store history.Store
	// root, when set, is the run's question saved without a parent (the
	// first of its session, or a new root): nothing comes before it, so
	// its branch is known to be empty without asking the store — one
	// query less on the way to a new conversation's first token.
	root string
}

// messagesBefore returns the reader of the history before the saved
// question q.
func (m *Manager) messagesBefore(q history.Message) messageReader {
	r := messageReader{store: m.opts.History}
	if q.ParentID == "" {
		r.root = q.ID
	}
	return r
}

// Branch implements conversation.MessageReader: the store's branch ending at
// the question, less the question.
func (r messageReader) Branch(ctx context.Context, sessionID, before string, limit int) ([]conversation.Message, error) {
	if before != "" && before == r.root {
		return []conversation.Message{}, nil
	}
	if limit > 0 {
		limit++ // the question itself, left out below
	}
	msgs, err := r.store.Branch(ctx, sessionID, before, limit)
	if err != nil {
		return nil, err
	}
	if n := len(msgs); n > 0 && msgs[n-1].ID == before {
		msgs = msgs[:n-1]
	}
	out := make([]conversation.Message, len(msgs))
	for i, m := range msgs {
		out[i] = conversation.Message{ID: m.ID, Role: m.Role, Content: m.Content, Thinking: think.StripSaved(m.Thinking), Status: m.Status}
		if m.Record != nil {
			for _, c := range m.Record.ToolCalls {
				out[i].ToolCalls = append(out[i].ToolCalls, conversation.ToolCall{
					ID: c.ID, Name: c.Name, Arguments: c.Arguments, Output: c.Output, Turn: c.Turn})
			}
		}
	}
	return out, nil
}

// summaryStore adapts the history store to conversation.SummaryStore.
type summaryStore struct{ store history.Store }

func (s summaryStore) Summaries(ctx context.Context, sessionID string, limit int) ([]conversation.Summary, error) {
	list, err := s.store.Summaries(ctx, sessionID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]conversation.Summary, len(list))
	for i, sum := range list {
		out[i] = conversation.Summary{ID: sum.ID, FromMessageID: sum.FromMessageID, ToMessageID: sum.ToMessageID,
			Messages: sum.Messages, Content: sum.Content, Model: sum.Model}
	}
	return out, nil
}

func (s summaryStore) SaveSummary(ctx context.Context, sessionID string, sum conversation.Summary) error {
	_, err := s.store.SaveSummary(ctx, history.Summary{ID: sum.ID, SessionID: sessionID, FromMessageID: sum.FromMessageID,
		ToMessageID: sum.ToMessageID, Messages: sum.Messages, Content: sum.Content, Model: sum.Model})
	return err
}
