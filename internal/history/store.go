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
	// ErrBadParent: the message a new question or answer was to follow is
	// not one of the session's messages, or has the wrong role (a question
	// follows an answer or starts the session; an answer follows a
	// question); nothing was saved.
	ErrBadParent = errors.New("not a valid parent message")
)

// Title sources: who set a session's title.
const (
	TitleDefault   = ""          // set at creation (or never)
	TitleGenerated = "generated" // written by the title generator
	TitleUser      = "user"      // set by the user; never overwritten by a generated one
)

// Root, as the ParentID of the user message given to StartTurn, starts
// a new root of the session's tree (an edited first question). It is not
// a message ID and is never stored.
const Root = "\x00root"

// DefaultTenant owns the data of a server running without API keys.
const DefaultTenant = "default"

// Session is a conversation. It belongs to a tenant (the owner of an API
// key); its messages and streams are visible to that tenant only.
// CreatedAt and UpdatedAt are set by the store (UTC, microsecond
// precision); values passed in are ignored.
type Session struct {
	ID       string
	TenantID string // "" is stored as DefaultTenant
	Title    string
	Mode     string
	// TitleSource says who set Title: TitleDefault, TitleGenerated or
	// TitleUser. CreateSession keeps TitleUser (a title the user gave at
	// creation) and stores anything else as TitleDefault.
	TitleSource string
	// CurrentLeaf is the last message of the branch the session shows and
	// answers ("" = no message yet). Set by the store: StartTurn and
	// StartAnswer move it to the new answer; SetCurrentLeaf switches it.
	CurrentLeaf string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Message is one turn of a session. CreatedAt and UpdatedAt are set by
// the store (UTC, microsecond precision); values passed in are ignored.
// Empty References are read back as nil, and a nil Usage stays nil.
//
// A session's messages form a tree: each message follows its parent
// (ParentID; "" for a first question). Answers regenerated for one
// question are siblings (children of that question); an edited question
// is a sibling of the one it replaces. Messages saved before the tree
// existed read as one chain (migration 0003).
type Message struct {
	ID         string
	SessionID  string
	ParentID   string // "" = a root of the session's tree
	Role       string
	Content    string
	Thinking   string
	References []eventbus.Reference
	Status     string
	Usage      *eventbus.Usage
	Error      string // why a failed message failed, for the user
	// Model is the configured model entry that wrote an assistant message
	// ("" = unknown: saved before it was recorded, or never generated).
	Model string
	// Record is the durable account of how an assistant message was
	// made (nil = none saved).
	Record    *Record
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Final is the last state of an assistant message.
type Final struct {
	Status     string // completed | stopped | failed
	Content    string
	Thinking   string
	References []eventbus.Reference
	Usage      *eventbus.Usage
	Error      string
	Model      string  // the model entry that wrote it ("" = unknown)
	Record     *Record // nil = nothing to record
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
	//
	// user.ParentID places the question in the session's tree: "" follows
	// the session's current leaf (read in the same transaction), Root
	// starts a new root, any other value must be an assistant message of
	// the session (else ErrBadParent, nothing saved). The answer follows
	// the question and becomes the session's current leaf. The returned
	// userMsg carries the parent as resolved (the leaf it followed, or
	// Root): a run reads its history from there, and skips the read for
	// Root.
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

	// StartAnswer reserves a new assistant message (status streaming)
	// answering the user message parentID again — a sibling of its earlier
	// answers — makes it the session's current leaf and touches the
	// session's UpdatedAt, in one transaction. ErrNotFound for an unknown
	// session, ErrBadParent when parentID is not a user message of the
	// session, ErrAlreadyExists when the ID is taken; then nothing is saved.
	StartAnswer(ctx context.Context, sessionID, parentID, assistantID string) (Message, error)
	// Branch returns the messages from the root of the session's tree down
	// to leafID, root first ("" = the session's current leaf; none when the
	// session has no message); limit > 0 keeps only the newest limit of
	// them (those nearest the leaf), and reads no more. ErrNotFound for an
	// unknown session or a leafID that is not a message of the session.
	Branch(ctx context.Context, sessionID, leafID string, limit int) ([]Message, error)
	// SetCurrentLeaf switches the branch the session shows and answers.
	// ErrNotFound for an unknown session or a leafID that is not a message
	// of the session. It does not touch UpdatedAt.
	SetCurrentLeaf(ctx context.Context, sessionID, leafID string) error
	// RenameSession sets a title chosen by the user (TitleSource becomes
	// TitleUser) and touches UpdatedAt; ErrNotFound for an unknown session.
	RenameSession(ctx context.Context, id, title string) error
	// SetGeneratedTitle sets a generated title (TitleSource becomes
	// TitleGenerated) unless the user has set one, and reports whether it
	// wrote; ErrNotFound for an unknown session.
	SetGeneratedTitle(ctx context.Context, id, title string) (applied bool, err error)
	// SetSessionMode changes the chat mode of the session's next answers;
	// ErrNotFound for an unknown session.
	SetSessionMode(ctx context.Context, id, mode string) error
	// ListMessages returns a session's messages — every branch — in the
	// order they were created (insertion order, even when times tie). It
	// fails with ErrNotFound for an unknown session.
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
