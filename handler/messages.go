package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/run"
)

type postMessageRequest struct {
	Content string `json:"content"`
	Mode    string `json:"mode"`
	Stream  *bool  `json:"stream"`
	// Models names 2 or 3 models to answer side by side on one stream
	// (streamed only); each answer is saved as its own message.
	Models []string `json:"models"`
	// ParentID is the answer the question follows: absent = the session's
	// current leaf, null = none (a new first question). Editing a
	// question is posting the new text with the edited one's parent.
	ParentID optionalID `json:"parent_id"`
	// Title names a session created by this request (POST
	// /api/v1/messages only).
	Title *string `json:"title"`
}

// optionalID is a JSON field that may be absent, null or an ID.
type optionalID struct {
	Set  bool // present in the request
	Null bool // present as null
	ID   string
}

// UnmarshalJSON implements json.Unmarshaler; it runs only when the field
// is present.
func (o *optionalID) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.ID)
}

// postMessage asks a question. The answer streams as SSE (the default) or,
// with "stream": false, comes back as the finished message — built by
// consuming the very same event stream. On POST /api/v1/messages the
// question opens a new session (stream.started carries its id).
func (h *Handler) postMessage(c *gin.Context) {
	if id, streaming, ok := h.startMessage(c); ok {
		h.answer(c, id, streaming, false)
	}
}

// startMessage validates the question and starts its answer, or answers
// the error; apart from postMessage so that its large frame is gone
// before the answer streams (see streamTail).
func (h *Handler) startMessage(c *gin.Context) (streamID string, streaming, ok bool) {
	cfg := h.cfg()
	var req postMessageRequest
	if rerr := decodeJSON(c, cfg.Limits.MaxBodyBytes, &req, false); rerr != nil {
		abort(c, rerr.status, rerr.code, rerr.message)
		return "", false, false
	}
	newSession := c.Param("id") == ""
	if !newSession && req.Title != nil {
		abort(c, http.StatusBadRequest, "unexpected_title",
			`"title" names a new session (POST /api/v1/messages); rename this one with PATCH /api/v1/sessions/{id}.`)
		return "", false, false
	}
	if newSession && req.ParentID.Set {
		abort(c, http.StatusBadRequest, "unexpected_parent", `A new session has no messages to follow; leave out "parent_id".`)
		return "", false, false
	}
	if req.ParentID.Set && !req.ParentID.Null && (req.ParentID.ID == "" || req.ParentID.ID == history.Root) {
		abort(c, http.StatusBadRequest, "invalid_parent", `"parent_id" is empty; send an answer's id, or null to start over.`)
		return "", false, false
	}
	if strings.TrimSpace(req.Content) == "" {
		abort(c, http.StatusBadRequest, "empty_content", `The question is empty; put it in "content".`)
		return "", false, false
	}
	if !utf8.ValidString(req.Content) {
		abort(c, http.StatusBadRequest, "invalid_content", "The question is not valid UTF-8 text.")
		return "", false, false
	}
	if n, limit := utf8.RuneCountInString(req.Content), cfg.Limits.MaxQuestionChars; n > limit {
		abort(c, http.StatusBadRequest, "content_too_long",
			fmt.Sprintf("The question is %d characters long; the limit is %d.", n, limit))
		return "", false, false
	}
	if !h.checkMode(c, req.Mode) {
		return "", false, false
	}
	if req.Models != nil && req.Stream != nil && !*req.Stream {
		abort(c, http.StatusBadRequest, "stream_required",
			`Answers of several models come as one event stream; leave out "stream": false.`)
		return "", false, false
	}

	if limit := cfg.Limits.MaxConcurrentStreams; limit > 0 && len(req.Models) > limit {
		abort(c, http.StatusBadRequest, "too_many_models", fmt.Sprintf(
			"Answering with %d models at once counts as %d answers being generated, and this key may have only %d "+
				"(limits.max_concurrent_streams); ask fewer models.", len(req.Models), len(req.Models), limit))
		return "", false, false
	}
	sessionID := c.Param("id")
	if newSession {
		sess, ok := h.newSession(c, deref(req.Title), req.Mode)
		if !ok {
			return "", false, false
		}
		// Saved only once the request is known good, and removed again if
		// the answer cannot start: a refused request leaves nothing.
		if _, err := h.deps.History.CreateSession(c.Request.Context(), sess); err != nil {
			h.internal(c, "create session", err)
			return "", false, false
		}
		sessionID = sess.ID
	}
	parent := req.ParentID.ID
	if req.ParentID.Null {
		parent = history.Root
	}
	r, ok, err := h.startLimited(c, len(req.Models), func() (*run.Run, error) {
		return h.deps.Runs.Start(c.Request.Context(), run.StartRequest{
			TenantID: tenant(c), SessionID: sessionID, Question: req.Content, Mode: req.Mode, Models: req.Models,
			ParentID: parent})
	}, func(msg string) { abort(c, http.StatusTooManyRequests, "too_many_streams", msg) })
	if newSession && (!ok || err != nil) {
		if derr := h.deps.History.DeleteSession(context.WithoutCancel(c.Request.Context()), sessionID); derr != nil {
			h.reqLog(c).Warn("removing a session whose first answer did not start failed", zap.Error(derr))
		}
	}
	if !ok {
		return "", false, false
	}
	if h.startFailed(c, err) {
		return "", false, false
	}
	return r.StreamID, req.Stream == nil || *req.Stream, true
}

// startFailed answers a run that did not start, and reports whether it
// did not.
func (h *Handler) startFailed(c *gin.Context, err error) bool {
	switch {
	case errors.Is(err, history.ErrBadParent):
		abort(c, http.StatusBadRequest, "invalid_parent", `"parent_id" is not an answer in this session: a question `+
			`follows an answer of the same session (or null, to start the conversation over).`)
		return true
	case errors.Is(err, history.ErrNotFound):
		abort(c, http.StatusNotFound, "session_not_found", "No session with id "+strconv.Quote(c.Param("id"))+".")
	case errors.Is(err, run.ErrUnknownMode):
		// The session's own mode was removed from config.yaml.
		abort(c, http.StatusBadRequest, "unknown_mode",
			"This session's mode is no longer configured; pass \"mode\" explicitly. "+h.unknownModeMessage(""))
	case errors.Is(err, run.ErrShuttingDown):
		abort(c, http.StatusServiceUnavailable, "shutting_down", "The server is restarting; try again in a moment.")
	case errors.Is(err, run.ErrBadModels):
		abort(c, http.StatusBadRequest, "invalid_models", `"models": `+strings.TrimPrefix(err.Error(), run.ErrBadModels.Error()+": ")+".")
	case errors.Is(err, run.ErrUnknownModel):
		abort(c, http.StatusBadRequest, "unknown_model", "A model in \"models\" is not configured: "+
			strings.TrimPrefix(err.Error(), run.ErrUnknownModel.Error()+" ")+" (models: "+h.modelNames()+").")
	case err != nil:
		h.internal(c, "start answer", err)
	}
	return err != nil
}

type regenerateRequest struct {
	Mode   string `json:"mode"`
	Stream *bool  `json:"stream"`
}

// regenerate answers an answer's question again; the new answer is a
// sibling of the old one, streamed (or gathered) as postMessage's.
func (h *Handler) regenerate(c *gin.Context) {
	var req regenerateRequest
	if rerr := decodeJSON(c, h.cfg().Limits.MaxBodyBytes, &req, true); rerr != nil {
		abort(c, rerr.status, rerr.code, rerr.message)
		return
	}
	if !h.checkMode(c, req.Mode) {
		return
	}
	r, ok, err := h.startLimited(c, 1, func() (*run.Run, error) {
		return h.deps.Runs.Regenerate(c.Request.Context(), run.RegenerateRequest{
			TenantID: tenant(c), MessageID: c.Param("id"), Mode: req.Mode})
	}, func(msg string) { abort(c, http.StatusTooManyRequests, "too_many_streams", msg) })
	if !ok {
		return
	}
	switch {
	case errors.Is(err, history.ErrNotFound):
		abort(c, http.StatusNotFound, "message_not_found", "No message with id "+strconv.Quote(c.Param("id"))+".")
		return
	case errors.Is(err, run.ErrNotAnswer):
		abort(c, http.StatusBadRequest, "not_an_answer", "Message "+strconv.Quote(c.Param("id"))+
			" is a question; regenerate an answer, or edit a question by posting the new text with its parent_id.")
		return
	}
	if h.startFailed(c, err) {
		return
	}
	h.answer(c, r.StreamID, req.Stream == nil || *req.Stream, false)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// modelNames lists the configured models, for error messages.
func (h *Handler) modelNames() string {
	names := make([]string, 0, len(h.cfg().Models))
	for name := range h.cfg().Models {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
