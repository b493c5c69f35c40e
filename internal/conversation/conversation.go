// Package conversation is a session's past as the chain sees it: the
// earlier turns sent to the model (with an agent's tool calls), the
// summaries that replace compacted ranges of them, and the jobs that run
// after a turn (a title, a summary). The run lifecycle reads them from the
// history store, the HTTP API builds them from stateless requests, and
// plugins use them. It is a leaf (standard library and eventbus only).
package conversation

import (
	"context"

	"github.com/chatpipe/chatpipe/eventbus"
)

// Message is an earlier turn of the session.
type Message struct {
	ID       string // the saved message's id
	Role     string // user or assistant
	Content  string
	Thinking string
	Status   string // completed, stopped, failed or streaming
	// ToolCalls are the tool calls an assistant message made and their
	// results, in order (an agent's turn); nil for other messages.
	ToolCalls []ToolCall
}

// ToolCall is a tool call of an earlier answer and its result.
type ToolCall struct {
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
	// answer it follows — oldest first; limit > 0 keeps only the newest
	// limit. Other branches (regenerated answers, edited questions) are
	// not in it.
	Branch(ctx context.Context, sessionID, before string, limit int) ([]Message, error)
}

// Summary is a saved summary of a range of a session's messages, which
// the model is sent in their place.
type Summary struct {
	ID            string
	FromMessageID string // first message covered
	ToMessageID   string // last message covered
	Messages      int    // how many it covers
	Content       string
	Model         string // the model entry that wrote it
}

// SummaryStore keeps the summaries of compacted history.
type SummaryStore interface {
	// Summaries returns up to limit of a session's summaries, newest first.
	Summaries(ctx context.Context, sessionID string, limit int) ([]Summary, error)
	// SaveSummary saves a new summary of messages of the session.
	SaveSummary(ctx context.Context, sessionID string, s Summary) error
}

// Background runs model jobs that follow a turn off the token path (the
// summary of older history, a session's title): the answer never waits
// for them.
type Background interface {
	// Go runs job on its own goroutine, with a context that ends when the
	// server shuts down. The events it returns are emitted on the run's
	// stream if the stream is still open when it ends (the run waits a
	// bounded time for its jobs before stream.finished); an error is
	// logged. Go reports false, and job does not run, when too many jobs
	// run already or the server is shutting down.
	Go(kind string, job func(ctx context.Context) ([]eventbus.Event, error)) bool
}
