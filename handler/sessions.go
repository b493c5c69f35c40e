package handler

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/think"
)

// SessionJSON is a session as the API shows it.
type SessionJSON struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Mode      string `json:"mode"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// MessageJSON is a message as the API shows it.
type MessageJSON struct {
	ID         string               `json:"id"`
	Role       string               `json:"role"`
	Content    string               `json:"content"`
	Thinking   string               `json:"thinking"`
	References []eventbus.Reference `json:"references"`
	Status     string               `json:"status"`
	Usage      *eventbus.Usage      `json:"usage"`
	Error      string               `json:"error,omitempty"`
	CreatedAt  string               `json:"created_at"`
	// Feedback is the user's rating of an answer; null when none.
	Feedback *FeedbackJSON `json:"feedback"`
}

func timeJSON(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func sessionJSON(s history.Session) SessionJSON {
	return SessionJSON{ID: s.ID, Title: s.Title, Mode: s.Mode, CreatedAt: timeJSON(s.CreatedAt), UpdatedAt: timeJSON(s.UpdatedAt)}
}

func messageJSON(m history.Message) MessageJSON {
	refs := m.References
	if refs == nil {
		refs = []eventbus.Reference{}
	}
	// Thinking saved before tags were taken off at save time still has
	// them: stripped on read rather than by a migration, so no stored
	// row is rewritten and a downgrade reads the same data.
	return MessageJSON{ID: m.ID, Role: m.Role, Content: m.Content, Thinking: think.StripSaved(m.Thinking), References: refs,
		Status: m.Status, Usage: m.Usage, Error: m.Error, CreatedAt: timeJSON(m.CreatedAt)}
}

type createSessionRequest struct {
	Title string `json:"title"`
	Mode  string `json:"mode"`
}

func (h *Handler) createSession(c *gin.Context) {
	var req createSessionRequest
	if rerr := decodeJSON(c, h.cfg().Limits.MaxBodyBytes, &req, true); rerr != nil {
		abort(c, rerr.status, rerr.code, rerr.message)
		return
	}
	req.Title = strings.TrimSpace(req.Title)
	if n, limit := utf8.RuneCountInString(req.Title), h.cfg().Limits.MaxTitleChars; n > limit {
		abort(c, http.StatusBadRequest, "title_too_long", fmt.Sprintf("The title is %d characters; the limit is %d.", n, limit))
		return
	}
	if req.Title == "" {
		req.Title = "New chat"
	}
	if req.Mode == "" {
		req.Mode = h.cfg().DefaultMode // a session keeps its mode even if the default changes later
	}
	if !h.knownMode(req.Mode) {
		abort(c, http.StatusBadRequest, "unknown_mode", h.unknownModeMessage(req.Mode))
		return
	}
	s, err := h.deps.History.CreateSession(c.Request.Context(), history.Session{
		ID: uuid.Must(uuid.NewV7()).String(), TenantID: tenant(c), Title: req.Title, Mode: req.Mode})
	if err != nil {
		h.internal(c, "create session", err)
		return
	}
	c.JSON(http.StatusCreated, sessionJSON(s))
}

func (h *Handler) knownMode(mode string) bool { return slices.Contains(h.deps.Modes(), mode) }

func (h *Handler) unknownModeMessage(mode string) string {
	return fmt.Sprintf("Unknown mode %q; available modes: %s.", mode, strings.Join(h.deps.Modes(), ", "))
}

func (h *Handler) listSessions(c *gin.Context) {
	limit, ok := queryInt(c, "limit", 50, 1, 500)
	if !ok {
		return
	}
	offset, ok := queryInt(c, "offset", 0, 0, 1<<31-1)
	if !ok {
		return
	}
	list, err := h.deps.History.ListSessions(c.Request.Context(), tenant(c), limit, offset)
	if err != nil {
		h.internal(c, "list sessions", err)
		return
	}
	out := make([]SessionJSON, len(list))
	for i, s := range list {
		out[i] = sessionJSON(s)
	}
	c.JSON(http.StatusOK, gin.H{"sessions": out})
}

// queryInt reads an optional integer query parameter within [lo, hi],
// answering 400 itself when it is malformed.
func queryInt(c *gin.Context, name string, def, lo, hi int) (int, bool) {
	raw, present := c.GetQuery(name)
	if !present {
		return def, true
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		abort(c, http.StatusBadRequest, "invalid_query",
			fmt.Sprintf("Query parameter %q must be a whole number from %d to %d.", name, lo, hi))
		return 0, false
	}
	return n, true
}

// session loads the caller's session named in the path, answering 404
// itself; another tenant's session is answered exactly like a missing one.
func (h *Handler) session(c *gin.Context) (history.Session, bool) {
	s, err := h.deps.History.GetSession(c.Request.Context(), c.Param("id"))
	if err == nil && s.TenantID != tenant(c) {
		err = history.ErrNotFound
	}
	if errors.Is(err, history.ErrNotFound) {
		abort(c, http.StatusNotFound, "session_not_found", "No session with id "+strconv.Quote(c.Param("id"))+".")
		return s, false
	}
	if err != nil {
		h.internal(c, "get session", err)
		return s, false
	}
	return s, true
}

func (h *Handler) getSession(c *gin.Context) {
	if s, ok := h.session(c); ok {
		c.JSON(http.StatusOK, sessionJSON(s))
	}
}

func (h *Handler) deleteSession(c *gin.Context) {
	s, ok := h.session(c)
	if !ok {
		return
	}
	// Answers still being generated for this session would have nowhere
	// to be saved: stop them so the provider stops billing.
	h.deps.Runs.StopSession(c.Request.Context(), s.ID)
	err := h.deps.History.DeleteSession(c.Request.Context(), s.ID)
	if err != nil && !errors.Is(err, history.ErrNotFound) {
		h.internal(c, "delete session", err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (h *Handler) listMessages(c *gin.Context) {
	s, ok := h.session(c)
	if !ok {
		return
	}
	msgs, err := h.deps.History.ListMessages(c.Request.Context(), s.ID)
	if err != nil {
		h.internal(c, "list messages", err)
		return
	}
	out := make([]MessageJSON, len(msgs))
	for i, m := range msgs {
		out[i] = messageJSON(m)
	}
	if err := h.attachFeedback(c, out); err != nil {
		h.internal(c, "read feedback", err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"messages": out})
}

// internal logs err and answers 500 without details.
func (h *Handler) internal(c *gin.Context, what string, err error) {
	if c.Request.Context().Err() != nil {
		return // the client left; nobody to answer
	}
	h.log.Error(what+" failed", zap.Error(err))
	abort(c, http.StatusInternalServerError, "internal_error", "Something went wrong on the server; please try again.")
}
