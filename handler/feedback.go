package handler

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/chatpipe/chatpipe/internal/history"
)

// Bounds of what feedback may carry.
const (
	maxFeedbackCommentChars = 4000
	maxFeedbackReasonChars  = 200
	maxFeedbackExport       = 10000 // rows one export returns at most
)

// FeedbackJSON is a message's feedback as the API shows it.
type FeedbackJSON struct {
	MessageID string `json:"message_id"`
	SessionID string `json:"session_id,omitempty"`
	Rating    string `json:"rating"`
	Comment   string `json:"comment"`
	Reason    string `json:"reason"`
	Mode      string `json:"mode,omitempty"`
	Model     string `json:"model,omitempty"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func feedbackJSON(f history.Feedback) *FeedbackJSON {
	return &FeedbackJSON{MessageID: f.MessageID, Rating: f.Rating, Comment: f.Comment, Reason: f.Reason,
		CreatedAt: timeJSON(f.CreatedAt), UpdatedAt: timeJSON(f.UpdatedAt)}
}

type feedbackRequest struct {
	Rating  string `json:"rating"`
	Comment string `json:"comment"`
	Reason  string `json:"reason"`
}

// ownedMessage loads the caller's message named in the path, answering 404
// itself; another tenant's message is answered exactly like a missing one.
func (h *Handler) ownedMessage(c *gin.Context) (history.Message, history.Session, bool) {
	ctx := c.Request.Context()
	id := c.Param("id")
	var sess history.Session
	msg, err := h.deps.History.GetMessage(ctx, id)
	if err == nil {
		sess, err = h.deps.History.GetSession(ctx, msg.SessionID)
		if err == nil && sess.TenantID != tenant(c) {
			err = history.ErrNotFound
		}
	}
	switch {
	case errors.Is(err, history.ErrNotFound):
		abort(c, http.StatusNotFound, "message_not_found", "No message with id "+strconv.Quote(id)+".")
		return msg, sess, false
	case err != nil:
		h.internal(c, "get message", err)
		return msg, sess, false
	}
	return msg, sess, true
}

// putFeedback rates an answer: PUT /api/v1/messages/{id}/feedback. The same
// request twice leaves the same feedback.
func (h *Handler) putFeedback(c *gin.Context) {
	var req feedbackRequest
	if rerr := decodeJSON(c, h.cfg().Limits.MaxBodyBytes, &req, false); rerr != nil {
		abort(c, rerr.status, rerr.code, rerr.message)
		return
	}
	if req.Rating != history.RatingUp && req.Rating != history.RatingDown {
		abort(c, http.StatusBadRequest, "invalid_rating", `"rating" must be "up" or "down".`)
		return
	}
	for _, f := range []struct {
		name, value string
		limit       int
	}{{"comment", req.Comment, maxFeedbackCommentChars}, {"reason", req.Reason, maxFeedbackReasonChars}} {
		if !utf8.ValidString(f.value) {
			abort(c, http.StatusBadRequest, "invalid_"+f.name, fmt.Sprintf("The %s is not valid UTF-8 text.", f.name))
			return
		}
		if n := utf8.RuneCountInString(f.value); n > f.limit {
			abort(c, http.StatusBadRequest, f.name+"_too_long",
				fmt.Sprintf("The %s is %d characters long; the limit is %d.", f.name, n, f.limit))
			return
		}
	}
	msg, _, ok := h.ownedMessage(c)
	if !ok {
		return
	}
	if msg.Role != history.RoleAssistant {
		abort(c, http.StatusBadRequest, "not_an_answer", "Feedback is given on answers; message "+
			strconv.Quote(msg.ID)+" is a question.")
		return
	}
	saved, previous, err := h.deps.History.SetFeedback(c.Request.Context(), history.Feedback{
		MessageID: msg.ID, Rating: req.Rating, Comment: req.Comment, Reason: req.Reason, Model: msg.Model})
	switch {
	case errors.Is(err, history.ErrNotFound): // deleted meanwhile
		abort(c, http.StatusNotFound, "message_not_found", "No message with id "+strconv.Quote(msg.ID)+".")
		return
	case err != nil:
		h.internal(c, "set feedback", err)
		return
	}
	if h.deps.Metrics != nil {
		h.deps.Metrics.Feedback(saved.Mode, saved.Model, saved.Rating, previous)
	}
	c.JSON(http.StatusOK, feedbackJSON(saved))
}

// deleteFeedback withdraws an answer's feedback; 204 whether or not it had
// any.
func (h *Handler) deleteFeedback(c *gin.Context) {
	msg, _, ok := h.ownedMessage(c)
	if !ok {
		return
	}
	removed, found, err := h.deps.History.DeleteFeedback(c.Request.Context(), msg.ID)
	if err != nil {
		h.internal(c, "delete feedback", err)
		return
	}
	if found && h.deps.Metrics != nil {
		h.deps.Metrics.Feedback(removed.Mode, removed.Model, "", removed.Rating)
	}
	c.Status(http.StatusNoContent)
}

// exportFeedback lists the caller's feedback updated since a time:
// GET /api/v1/feedback?since=<RFC 3339>&limit=N, oldest update first. To
// page, pass the last row's updated_at as the next since (a row updated
// at that very instant comes again).
func (h *Handler) exportFeedback(c *gin.Context) {
	var since time.Time
	if raw := c.Query("since"); raw != "" {
		t, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			abort(c, http.StatusBadRequest, "invalid_query",
				`Query parameter "since" must be a time in RFC 3339 form, e.g. 2026-12-01T00:00:00Z.`)
			return
		}
		since = t
	}
	limit, ok := queryInt(c, "limit", 1000, 1, maxFeedbackExport)
	if !ok {
		return
	}
	list, err := h.deps.History.ListFeedback(c.Request.Context(), tenant(c), since, limit)
	if err != nil {
		h.internal(c, "list feedback", err)
		return
	}
	out := make([]*FeedbackJSON, len(list))
	for i, f := range list {
		out[i] = feedbackJSON(f)
		out[i].SessionID, out[i].Mode, out[i].Model = f.SessionID, f.Mode, f.Model
	}
	c.JSON(http.StatusOK, gin.H{"feedback": out})
}

// attachFeedback fills in the feedback of the assistant messages in out.
func (h *Handler) attachFeedback(c *gin.Context, out []MessageJSON) error {
	ids := make([]string, 0, len(out)/2+1)
	for _, m := range out {
		if m.Role == history.RoleAssistant {
			ids = append(ids, m.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	got, err := h.deps.History.FeedbackFor(c.Request.Context(), ids)
	if err != nil {
		return err
	}
	for i := range out {
		if f, ok := got[out[i].ID]; ok {
			out[i].Feedback = feedbackJSON(f)
		}
	}
	return nil
}
