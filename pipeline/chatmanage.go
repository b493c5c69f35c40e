package pipeline

import (
	"context"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/approval"
	"github.com/chatpipe/chatpipe/internal/chatmodel"
	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/inspect"
	"github.com/chatpipe/chatpipe/internal/remotetool"
	"github.com/chatpipe/chatpipe/internal/retrieval"
	"github.com/chatpipe/chatpipe/internal/sharedcache"
)

// ChatManage is one request's state as it moves down the chain: what was
// asked, what earlier plugins found, the emitter that carries output, and
// the services plugins use (behind small interfaces from the leaf
// packages, so plugins never import the stores and the stores never
// import the chain).
type ChatManage struct {
	// Logger is the run's logger (stream and session ids attached): a
	// plugin that degrades instead of failing logs the cause here, at warn,
	// never user text at info. Nil logs nothing; use Log.
	Logger *zap.Logger
	// The request.
	TenantID      string // the API key's tenant: knowledge and caches are scoped to it
	SessionID     string
	MessageID     string // the reserved assistant message; also the stream id
	UserMessageID string
	Mode          string
	Query         string // the user's question as asked
	// NoStreamRetry turns mid-stream retry off for this request: its
	// reader cannot withdraw output it already passed on (the streaming
	// OpenAI-compatible API).
	NoStreamRetry bool
	// Model, when set, is the model the generate stage asks instead of its
	// configured one: a request comparing several models runs the chain
	// once per model with this set.
	Model string
	// AnswerModel is set by the generate stage: the configured model entry
	// that answered, saved with the answer.
	AnswerModel string

	// Filled in by plugins.
	History        []conversation.Message // load_history: earlier turns, oldest first
	RewrittenQuery string                 // rewrite: the standalone question ("" = Query)
	SearchResults  []retrieval.SearchHit  // search, then rerank: candidates, best first
	References     []eventbus.Reference   // merge: numbered context passages, cited as [n]
	// NoContext is set by merge when retrieval found nothing and the
	// configured fallback lets the model answer anyway: the generate stage
	// then sends its numbered-context prompt with an empty context, so the
	// model says the knowledge base does not cover the question.
	NoContext bool
	// HistorySummary is load_history's summary of the turns before
	// History, when older history was compacted ("" = none): sent with
	// the system prompt.
	HistorySummary string

	// Emitter publishes this request's events. A plugin may replace it with
	// a wrapper for the rest of the chain and restore it after next().
	Emitter eventbus.Emitter

	// Services.
	Messages  conversation.MessageReader
	Models    chatmodel.Source
	Knowledge retrieval.Knowledge // nil when no knowledge base is configured
	Cache     sharedcache.Store   // nil when no cache is configured (response_cache then passes through)
	Approvals approval.Broker     // nil when no one can answer approval requests (calls that need one are denied)
	// RemoteTools are MCP servers' tools, for modes that list them; nil
	// when none are configured.
	RemoteTools remotetool.Source
	// Inspect gathers the turn inspector's record of this answer; nil when
	// the inspector is off (its methods then do nothing).
	Inspect *inspect.Recorder
	// Background runs model jobs after the turn (nil = none can run);
	// Summaries keeps compacted history (nil = no compaction).
	Background conversation.Background
	Summaries  conversation.SummaryStore

	stage   *stageState
	nextCtx context.Context // set by SetNextContext for the next call of next()
	values  map[any]any     // set by SetValue
}

// SetValue keeps v under key for the later plugins of this request, as
// gin's c.Set does: plugins that work as one (research_plan, research_run,
// research_report) hand their results on this way. Use a key of an
// unexported type of the plugin's package, so keys never collide. Not
// safe for concurrent use: a plugin sets values from its own goroutine.
func (cm *ChatManage) SetValue(key, v any) {
	if cm.values == nil {
		cm.values = map[any]any{}
	}
	cm.values[key] = v
}

// Value returns what SetValue kept under key, or nil.
func (cm *ChatManage) Value(key any) any { return cm.values[key] }

// SearchQuery is the question retrieval should use: the rewritten one when
// a rewrite happened.
func (cm *ChatManage) SearchQuery() string {
	if cm.RewrittenQuery != "" {
		return cm.RewrittenQuery
	}
	return cm.Query
}

// Emit publishes ev through the current emitter.
func (cm *ChatManage) Emit(ev eventbus.Event) { cm.Emitter.Emit(ev) }

// StageDetail sets the detail the running stage's finished event carries
// (e.g. "3 messages").
func (cm *ChatManage) StageDetail(detail string) {
	if cm.stage != nil {
		cm.stage.detail = detail
	}
}

// SkipStage marks the running stage as skipped, with a reason; its closing
// stage event then says skipped instead of finished.
func (cm *ChatManage) SkipStage(reason string) {
	if cm.stage != nil {
		cm.stage.status = eventbus.StageSkipped
		cm.stage.detail = reason
	}
}

// SetNextContext makes the running plugin's next call of next() run the
// rest of the chain with ctx instead of the plugin's own context. Derive
// ctx from the plugin's ctx (context.WithCancelCause) to be able to stop
// the later plugins — the model call included — while they run, as
// sensitive_filter does when an answer must end.
func (cm *ChatManage) SetNextContext(ctx context.Context) { cm.nextCtx = ctx }

// Log returns the run's logger, a no-op one when none is set.
func (cm *ChatManage) Log() *zap.Logger {
	if cm.Logger == nil {
		return zap.NewNop()
	}
	return cm.Logger
}
