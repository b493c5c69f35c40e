package pipeline

import (
	"context"

	"github.com/chatpipe/chatpipe/eventbus"
)

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

// HistorySummary is a saved summary of a range of a session's messages,
// which the model is sent in their place.
type HistorySummary struct {
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
	Summaries(ctx context.Context, sessionID string, limit int) ([]HistorySummary, error)
	// SaveSummary saves a new summary of messages of the session.
	SaveSummary(ctx context.Context, sessionID string, s HistorySummary) error
}
