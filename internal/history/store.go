// Package history stores sessions and their messages: the user's
// questions and the assistant's answers with their thinking, references,
// status and usage.
package history

import (
	"context"
	"errors"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message statuses: an assistant message is reserved as streaming and
// finished exactly once as completed, stopped or failed. User messages are
// completed.
const (
	StatusStreaming = "streaming"
	StatusCompleted = eventbus.StatusCompleted
	StatusStopped   = eventbus.StatusStopped
	StatusFailed    = eventbus.StatusFailed
)

// Sentinel errors callers branch on.
var (
	ErrNotFound = errors.New("not found")
	// ErrAlreadyFinished: FinishMessage found the message no longer
	// streaming; the first finish wins and nothing was changed.
	ErrAlreadyFinished = errors.New("message already finished")
	// ErrAlreadyExists: CreateSession or StartTurn was given an ID that a
	// session or message already has; nothing was saved.
	ErrAlreadyExists = errors.New("already exists")
)

// DefaultTenant owns the data of a server running without API keys.
const DefaultTenant = "default"

// Session is a conversation. It belongs to a tenant (the owner of an API
// key); its messages and streams are visible to that tenant only.
// CreatedAt and UpdatedAt are set by the store (UTC, microsecond
// precision); values passed in are ignored.
type Session struct {
	ID        string
	TenantID  string // "" is stored as DefaultTenant
	Title     string
	Mode      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Message is one turn of a session. CreatedAt and UpdatedAt are set by
// the store (UTC, microsecond precision); values passed in are ignored.
// Empty References are read back as nil, and a nil Usage stays nil.
type Message struct {
	ID         string
	SessionID  string
	Role       string
	Content    string
	Thinking   string
	References []eventbus.Reference
	Status     string
	Usage      *eventbus.Usage
	Error      string // why a failed message failed, for the user
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Final is the last state of an assistant message.
type Final struct {
	Status     string // completed | stopped | failed
	Content    string
	Thinking   string
	References []eventbus.Reference
	Usage      *eventbus.Usage
	Error      string
}

// Store persists sessions and messages. Every method is safe for
// concurrent use. IDs are chosen by the caller, must not be empty, and are
// unique per kind: a message ID is unique across all sessions. A lookup of
// an unknown ID fails with ErrNotFound. Lists are never nil, so they
// encode as [] in JSON. Package historytest holds the
// conformance suite every implementation passes.
type Store interface {
	// CreateSession saves a new session and returns it with its times set.
	// It fails with ErrAlreadyExists if the ID is taken.
	CreateSession(ctx context.Context, s Session) (Session, error)
	GetSession(ctx context.Context, id string) (Session, error)
	// ListSessions returns a tenant's sessions ("" = DefaultTenant), most
	// recently updated first. A limit <= 0 means no limit.
	ListSessions(ctx context.Context, tenantID string, limit, offset int) ([]Session, error)
	// DeleteSession removes a session and all its messages.
	DeleteSession(ctx context.Context, id string) error

	// StartTurn saves the user's message and reserves the assistant's
	// (status streaming, empty content) in one transaction, and touches the
	// session's UpdatedAt. It fails with ErrNotFound for an unknown session
	// and ErrAlreadyExists if either message ID is taken; then nothing is
	// saved. The user message gets the session ID, role user and status
	// completed whatever user carries in those fields.
	StartTurn(ctx context.Context, sessionID string, user Message, assistantID string) (userMsg, assistantMsg Message, err error)
	// FinishMessage writes the final state of a reserved assistant message
	// if, and only if, it is still streaming; otherwise ErrAlreadyFinished
	// (or ErrNotFound) and nothing changes. Of concurrent calls for one
	// message exactly one succeeds. f.Status must be completed, stopped or
	// failed.
	FinishMessage(ctx context.Context, id string, f Final) error
	// SavePartial writes the answer and thinking streamed so far into a
	// reserved assistant message if, and only if, it is still streaming,
	// so that a crash loses at most what arrived since the last call:
	// FailAbandoned keeps the saved text. A message already finished is
	// never changed (ErrAlreadyFinished): a late partial save cannot undo a
	// final one. ErrNotFound for an unknown message.
	SavePartial(ctx context.Context, id, content, thinking string) error
	GetMessage(ctx context.Context, id string) (Message, error)
	// ListMessages returns a session's messages in the order they were
	// created (insertion order, even when times tie). It fails with
	// ErrNotFound for an unknown session.
	ListMessages(ctx context.Context, sessionID string) ([]Message, error)
	// RecentMessages returns up to limit messages of the session created
	// before message `before` (all of them when before is ""), skipping
	// assistant messages that are still streaming or failed with no
	// content, oldest first. The limit keeps the newest of the eligible
	// messages; limit <= 0 means no limit. It fails with ErrNotFound for an
	// unknown session or a `before` that is not a message of the session.
	RecentMessages(ctx context.Context, sessionID, before string, limit int) ([]Message, error)
	// FailAbandoned marks as failed, with the given reason, every message
	// still streaming that was created before olderThan, and reports how
	// many. A single server passes its start time (whatever streams was
	// cut off by a crash); replicas sharing a database pass an age no live
	// generation can reach, so they never fail each other's answers.
	FailAbandoned(ctx context.Context, reason string, olderThan time.Time) (int, error)

	// Feedback on answers and summaries of compacted history (meta.go).
	FeedbackStore
	SummaryStore

	Ping(ctx context.Context) error
	Close() error
}
