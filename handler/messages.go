package handler

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
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
	// Models names 2 or 3 models to answer side by side on one stream
	// (streamed only); each answer is saved as its own message.
	Models []string `json:"models"`
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
	if req.Models != nil && req.Stream != nil && !*req.Stream {
		abort(c, http.StatusBadRequest, "stream_required",
			`Answers of several models come as one event stream; leave out "stream": false.`)
		return
	}

	if limit := cfg.Limits.MaxConcurrentStreams; limit > 0 && len(req.Models) > limit {
		abort(c, http.StatusBadRequest, "too_many_models", fmt.Sprintf(
			"Answering with %d models at once counts as %d answers being generated, and this key may have only %d "+
				"(limits.max_concurrent_streams); ask fewer models.", len(req.Models), len(req.Models), limit))
		return
	}
	r, ok, err := h.startLimited(c, len(req.Models), func() (*run.Run, error) {
		return h.deps.Runs.Start(c.Request.Context(), run.StartRequest{
			TenantID: tenant(c), SessionID: c.Param("id"), Question: req.Content, Mode: req.Mode, Models: req.Models})
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
	case errors.Is(err, run.ErrBadModels):
		abort(c, http.StatusBadRequest, "invalid_models", `"models": `+strings.TrimPrefix(err.Error(), run.ErrBadModels.Error()+": ")+".")
		return
	case errors.Is(err, run.ErrUnknownModel):
		abort(c, http.StatusBadRequest, "unknown_model", "A model in \"models\" is not configured: "+
			strings.TrimPrefix(err.Error(), run.ErrUnknownModel.Error()+" ")+" (models: "+h.modelNames()+").")
		return
	case err != nil:
		h.internal(c, "start answer", err)
		return
	}

	h.answer(c, r.StreamID, req.Stream == nil || *req.Stream)
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
