package history

import (
	"context"
	"errors"
	"time"
)

// ErrNotAssistant: feedback was given on a message that is not an
// assistant's answer; nothing was saved.
var ErrNotAssistant = errors.New("not an assistant message")

// Feedback ratings.
const (
	RatingUp   = "up"
	RatingDown = "down"
)

// Feedback is a user's rating of one assistant message: thumbs up or down,
// with an optional comment and reason. A message has at most one; setting
// it again replaces it. SessionID, TenantID, Mode and CreatedAt/UpdatedAt
// are set by the store (Mode is the session's mode, for metrics and the
// export); Model is the caller's (the model that wrote the message, when
// known).
type Feedback struct {
	MessageID string
	SessionID string
	TenantID  string
	Rating    string // up | down
	Comment   string
	Reason    string
	Mode      string
	Model     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// FeedbackStore keeps feedback on assistant messages. A message's feedback
// goes when the message (or its session) is deleted.
type FeedbackStore interface {
	// SetFeedback saves f for f.MessageID, replacing any earlier feedback
	// of that message (CreatedAt then keeps its first value), and returns
	// what was saved and the rating it replaced ("" when none). It fails
	// with ErrNotFound for an unknown message and ErrNotAssistant for a
	// user message; then nothing is saved.
	SetFeedback(ctx context.Context, f Feedback) (saved Feedback, previous string, err error)
	// DeleteFeedback removes a message's feedback and returns it; ok is
	// false when there was none (not an error: deleting is idempotent).
	DeleteFeedback(ctx context.Context, messageID string) (removed Feedback, ok bool, err error)
	// FeedbackFor returns the feedback of those of messageIDs that have
	// some, by message id (an empty map, never nil, when none do).
	FeedbackFor(ctx context.Context, messageIDs []string) (map[string]Feedback, error)
	// ListFeedback returns a tenant's feedback ("" = DefaultTenant) last
	// updated at or after since, oldest update first; limit <= 0 means no
	// limit.
	ListFeedback(ctx context.Context, tenantID string, since time.Time, limit int) ([]Feedback, error)
}

// Summary is a compaction of a session's history: the model's summary of
// a range of its messages, sent to the model in their place. FromMessageID
// and ToMessageID are the first and last messages it covers (an earlier
// summary it absorbed included, through FromMessageID); Messages counts
// them. ID, SessionID, Content and the range are the caller's; CreatedAt
// is set by the store.
type Summary struct {
	ID            string
	SessionID     string
	FromMessageID string
	ToMessageID   string
	Messages      int
	Content       string
	Model         string
	CreatedAt     time.Time
}

// RangeEnds is how many distinct messages bound the summary's range: 1
// when it covers a single message, else 2.
func (s Summary) RangeEnds() int {
	if s.FromMessageID == s.ToMessageID {
		return 1
	}
	return 2
}

// SummaryStore keeps the summaries of compacted history. A session's
// summaries go with the session.
type SummaryStore interface {
	// SaveSummary saves s. It fails with ErrNotFound for an unknown
	// session or a range whose messages are not the session's, and with
	// ErrAlreadyExists for a taken ID; then nothing is saved.
	SaveSummary(ctx context.Context, s Summary) (Summary, error)
	// Summaries returns up to limit of a session's summaries, newest
	// first (limit <= 0: all). An unknown session has none.
	Summaries(ctx context.Context, sessionID string, limit int) ([]Summary, error)
}
