package pipeline

import (
	"go.uber.org/zap"

	"context"
	"time"

	"github.com/cloudwego/eino/components/model"

	"github.com/chatpipe/chatpipe/eventbus"
)

// ChatManage is one request's state as it moves down the chain: what was
// asked, what earlier plugins found, the emitter that carries output, and
// the services plugins use (behind small interfaces, so plugins never
// import the stores).
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
	// Model, when set, is the model the generate stage asks instead of its
	// configured one: a request comparing several models runs the chain
	// once per model with this set.
	Model string
	// AnswerModel is set by the generate stage: the configured model entry
	// that answered, saved with the answer.
	AnswerModel string

	// Filled in by plugins.
	History        []HistoryMessage     // load_history: earlier turns, oldest first
	RewrittenQuery string               // rewrite: the standalone question ("" = Query)
	SearchResults  []SearchHit          // search, then rerank: candidates, best first
	References     []eventbus.Reference // merge: numbered context passages, cited as [n]
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
	Messages  MessageReader
	Models    ModelSource
	Knowledge Knowledge // nil when no knowledge base is configured
	Cache     Cache     // nil when no cache is configured (response_cache then passes through)
	Approvals Approvals // nil when no one can answer approval requests (calls that need one are denied)
	// RemoteTools are MCP servers' tools, for modes that list them; nil
	// when none are configured.
	RemoteTools RemoteTools
	// Background runs model jobs after the turn (nil = none can run);
	// Summaries keeps compacted history (nil = no compaction).
	Background Background
	Summaries  SummaryStore

	stage   *stageState
	nextCtx context.Context // set by SetNextContext for the next call of next()
}

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

// HistoryMessage is an earlier turn of the session.
type HistoryMessage struct {
	ID       string // the saved message's id
	Role     string // user or assistant
	Content  string
	Thinking string
	Status   string // completed, stopped, failed or streaming
	// ToolCalls are the tool calls an assistant message made and their
	// results, in order (an agent's turn); nil for other messages.
	ToolCalls []HistoryToolCall
}

// HistoryToolCall is a tool call of an earlier answer and its result.
type HistoryToolCall struct {
	ID        string
	Name      string
	Arguments string
	Output    string
	Turn      int // the model call that asked for it: calls of one turn were asked together
}

// MessageReader reads a session's saved messages.
type MessageReader interface {
	// Branch returns the messages before the question `before` on its
	// branch of the session's tree — from the first question down to the
	// answer it follows — oldest first. Other branches (regenerated
	// answers, edited questions) are not in it.
	Branch(ctx context.Context, sessionID, before string) ([]HistoryMessage, error)
}

// ChatModel is a configured chat model: an eino model plus the call options
// its config entry sets (temperature, max tokens).
type ChatModel struct {
	Name     string
	Provider string
	Model    model.ToolCallingChatModel
	Options  []model.Option
	Retries  int // retries of a call that fails before its first chunk
}

// ModelSource resolves the chat models named in config.yaml.
type ModelSource interface {
	ChatModel(name string) (*ChatModel, error)
}

// Knowledge searches the knowledge base: keyword (and vector, when
// embeddings are configured) retrieval fused into one ranking.
type Knowledge interface {
	Search(ctx context.Context, req SearchRequest) (SearchResponse, error)
	// Version changes whenever a document is added or deleted and never
	// repeats; compare it for equality only. Caches of answers key on it,
	// so a document change invalidates them.
	Version(ctx context.Context) (int64, error)
}

// Cache is a shared store of expiring byte values, for plugins that keep
// results across requests (response_cache). The app backs it with memory,
// or with Redis when replicas share streams. Implementations are safe for
// concurrent use and may evict a value before its ttl to stay in budget.
type Cache interface {
	// Get returns the value stored under key; ok is false when there is
	// none or it expired.
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)
	// Set stores value under key for ttl, replacing any earlier value.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// SearchRequest asks the knowledge base for candidates. Zero fields take
// the knowledge base's configured defaults.
type SearchRequest struct {
	TenantID      string // whose documents to search ("" = the default tenant)
	Query         string
	TopK          int     // candidates to return
	KeywordWeight float64 // weight of the keyword ranking in the fusion
	VectorWeight  float64 // weight of the vector ranking in the fusion
	RRFK          int     // k of reciprocal rank fusion: 1/(k+rank)
}

// SearchResponse is the fused candidate list, best first.
type SearchResponse struct {
	Hits []SearchHit
	// Method says what ran: "hybrid", "keyword" or "vector".
	Method string
	// Degraded explains, for people, a part that failed and was left out
	// (e.g. "embedding endpoint unreachable; keyword search only").
	Degraded string
}

// SearchHit is one candidate passage.
type SearchHit struct {
	ChunkID      string
	DocumentID   string
	Title        string // the document's title
	Heading      string // the section heading the chunk sits under, if any
	Page         int    // the chunk's page (PDF) or slide (PPTX), 0 when the source has no pages
	Content      string
	ChunkIndex   int     // position of the chunk in its document
	Score        float64 // the fused score (higher is better); rerankers may replace it
	KeywordScore float64 // bm25-derived, 0 when not found by keyword
	VectorScore  float64 // cosine similarity, 0 when not found by vector
	KeywordRank  int     // 1-based, 0 when absent
	VectorRank   int     // 1-based, 0 when absent
}

// Log returns the run's logger, a no-op one when none is set.
func (cm *ChatManage) Log() *zap.Logger {
	if cm.Logger == nil {
		return zap.NewNop()
	}
	return cm.Logger
}
