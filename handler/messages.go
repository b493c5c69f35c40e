package handler

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/run"
)

type postMessageRequest struct {
	Content string `json:"content"`
	Mode    string `json:"mode"`
	Stream  *bool  `json:"stream"`
}

// postMessage asks a question. The answer streams as SSE (the default) or,
// with "stream": false, comes back as the finished message — built by
// consuming the very same event stream.
func (h *Handler) postMessage(c *gin.Context) {
	cfg := h.cfg()
	var req postMessageRequest
	if rerr := decodeJSON(c, cfg.Limits.MaxBodyBytes, &req, false); rerr != nil {
		abort(c, rerr.status, rerr.code, rerr.message)
		return
	}
	if strings.TrimSpace(req.Content) == "" {
		abort(c, http.StatusBadRequest, "empty_content", `The question is empty; put it in "content".`)
		return
	}
	if !utf8.ValidString(req.Content) {
		abort(c, http.StatusBadRequest, "invalid_content", "The question is not valid UTF-8 text.")
		return
	}
	if n, limit := utf8.RuneCountInString(req.Content), cfg.Limits.MaxQuestionChars; n > limit {
		abort(c, http.StatusBadRequest, "content_too_long",
			fmt.Sprintf("The question is %d characters long; the limit is %d.", n, limit))
		return
	}
	if req.Mode != "" && !h.knownMode(req.Mode) {
		abort(c, http.StatusBadRequest, "unknown_mode", h.unknownModeMessage(req.Mode))
		return
	}

	r, ok, err := h.startLimited(c, func() (*run.Run, error) {
		return h.deps.Runs.Start(c.Request.Context(), run.StartRequest{
			TenantID: tenant(c), SessionID: c.Param("id"), Question: req.Content, Mode: req.Mode})
	}, func(msg string) { abort(c, http.StatusTooManyRequests, "too_many_streams", msg) })
	if !ok {
		return
	}
	switch {
	case errors.Is(err, history.ErrNotFound):
		abort(c, http.StatusNotFound, "session_not_found", "No session with id "+strconv.Quote(c.Param("id"))+".")
		return
	case errors.Is(err, run.ErrUnknownMode):
		// The session's own mode was removed from config.yaml.
		abort(c, http.StatusBadRequest, "unknown_mode",
			"This session's mode is no longer configured; pass \"mode\" explicitly. "+h.unknownModeMessage(""))
		return
	case errors.Is(err, run.ErrShuttingDown):
		abort(c, http.StatusServiceUnavailable, "shutting_down", "The server is restarting; try again in a moment.")
		return
	case err != nil:
		h.internal(c, "start answer", err)
		return
	}

	c.Header("X-Message-Id", r.StreamID)
	if req.Stream == nil || *req.Stream {
		h.serveStream(c, r.StreamID, 0)
		return
	}
	sub, err := h.deps.Streams.Subscribe(c.Request.Context(), r.StreamID, 0)
	if err != nil {
		h.internal(c, "subscribe to stream", err)
		return
	}
	defer sub.Close()
	msg, err := gather(c.Request.Context(), sub)
	if err != nil {
		h.internal(c, "gather answer", err)
		return
	}
	renewWriteDeadline(c, cfg.Server.WriteTimeout) // the answer may have taken longer than one write may
	c.JSON(http.StatusOK, msg)
}
