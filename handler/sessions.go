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
	ID    string `json:"id"`
	Title string `json:"title"`
	// TitleSource says who set the title: "" (default), "generated" or "user".
	TitleSource string `json:"title_source"`
	Mode        string `json:"mode"`
	// CurrentLeaf is the last message of the branch the session shows
	// and answers (null before the first question).
	CurrentLeaf *string `json:"current_leaf"`
	CreatedAt   string  `json:"created_at"`
	UpdatedAt   string  `json:"updated_at"`
}

// MessageJSON is a message as the API shows it.
type MessageJSON struct {
	ID string `json:"id"`
	// ParentID is the message this one follows (null for a first
	// question); SiblingIDs are every version at its position — itself,
	// regenerated answers, edited questions — oldest first.
	ParentID   *string              `json:"parent_id"`
	SiblingIDs []string             `json:"sibling_ids"`
	Role       string               `json:"role"`
	Content    string               `json:"content"`
	Thinking   string               `json:"thinking"`
	References []eventbus.Reference `json:"references"`
	Status     string               `json:"status"`
	Usage      *eventbus.Usage      `json:"usage"`
	Error      string               `json:"error,omitempty"`
	// Model is the configured model that wrote an answer ("" = unknown);
	// assistant messages only.
	Model *string `json:"model,omitempty"`
	// The durable record of an answer: its tool calls with their results,
	// the stages that ran and the reference numbers it cited.
	ToolCalls []history.ToolCall    `json:"tool_calls,omitempty"`
	Stages    []history.StageTiming `json:"stages,omitempty"`
	Cited     []int                 `json:"cited,omitempty"`
	CreatedAt string                `json:"created_at"`
	// Feedback is the user's rating of an answer; null when none.
	Feedback *FeedbackJSON `json:"feedback"`
}

func timeJSON(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func sessionJSON(s history.Session) SessionJSON {
	return SessionJSON{ID: s.ID, Title: s.Title, TitleSource: s.TitleSource, Mode: s.Mode, CurrentLeaf: idOrNull(s.CurrentLeaf),
		CreatedAt: timeJSON(s.CreatedAt), UpdatedAt: timeJSON(s.UpdatedAt)}
}

// idOrNull shows "" (none) as JSON null.
func idOrNull(id string) *string {
	if id == "" {
		return nil
	}
	return &id
}

func messageJSON(m history.Message) MessageJSON {
	refs := m.References
	if refs == nil {
		refs = []eventbus.Reference{}
	}
	// Thinking saved before tags were taken off at save time still has
	// them: stripped on read rather than by a migration, so no stored
	// row is rewritten and a downgrade reads the same data.
	out := MessageJSON{ID: m.ID, ParentID: idOrNull(m.ParentID), SiblingIDs: []string{m.ID}, Role: m.Role, Content: m.Content,
		Thinking: think.StripSaved(m.Thinking), References: refs, Status: m.Status, Usage: m.Usage, Error: m.Error,
		CreatedAt: timeJSON(m.CreatedAt)}
	if m.Role == history.RoleAssistant {
		out.Model = &m.Model
	}
	if m.Record != nil {
		out.ToolCalls, out.Stages, out.Cited = m.Record.ToolCalls, m.Record.Stages, m.Record.Cited
	}
	return out
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
	sess, ok := h.newSession(c, req.Title, req.Mode)
	if !ok {
		return
	}
	s, err := h.deps.History.CreateSession(c.Request.Context(), sess)
	if err != nil {
		h.internal(c, "create session", err)
		return
	}
	c.JSON(http.StatusCreated, sessionJSON(s))
}

// newSession checks a new session's title and mode and returns it, not
// yet saved, or answers 400 itself. A title given is the user's (never
// replaced by a generated one); none is "New chat".
func (h *Handler) newSession(c *gin.Context, title, mode string) (history.Session, bool) {
	title = strings.TrimSpace(title)
	if !h.checkTitle(c, title) {
		return history.Session{}, false
	}
	source := history.TitleUser
	if title == "" {
		title, source = "New chat", history.TitleDefault
	}
	if mode == "" {
		mode = h.cfg().DefaultMode // a session keeps its mode even if the default changes later
	}
	if !h.knownMode(mode) {
		abort(c, http.StatusBadRequest, "unknown_mode", h.unknownModeMessage(mode))
		return history.Session{}, false
	}
	return history.Session{ID: uuid.Must(uuid.NewV7()).String(), TenantID: tenant(c), Title: title, Mode: mode,
		TitleSource: source}, true
}

// checkTitle answers 400 itself for a title over the limit.
func (h *Handler) checkTitle(c *gin.Context, title string) bool {
	if n, limit := utf8.RuneCountInString(title), h.cfg().Limits.MaxTitleChars; n > limit {
		abort(c, http.StatusBadRequest, "title_too_long", fmt.Sprintf("The title is %d characters; the limit is %d.", n, limit))
		return false
	}
	return true
}

// checkMode answers 400 itself for a mode that is given but not
// configured ("" is the session's or the default mode).
func (h *Handler) checkMode(c *gin.Context, mode string) bool {
	if mode != "" && !h.knownMode(mode) {
		abort(c, http.StatusBadRequest, "unknown_mode", h.unknownModeMessage(mode))
		return false
	}
	return true
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

// internal logs err and answers 500 without details.
func (h *Handler) internal(c *gin.Context, what string, err error) {
	if c.Request.Context().Err() != nil {
		return // the client left; nobody to answer
	}
	h.reqLog(c).Error(what+" failed", zap.Error(err))
	abort(c, http.StatusInternalServerError, "internal_error", "Something went wrong on the server; please try again.")
}
