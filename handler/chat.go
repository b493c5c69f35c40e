package handler

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/chatpipe/chatpipe/internal/conversation"
	"github.com/chatpipe/chatpipe/internal/run"
)

// ChatMessageJSON is one turn of a stateless conversation.
type ChatMessageJSON struct {
	Role    string `json:"role"` // user or assistant
	Content string `json:"content"`
}

type statelessChatRequest struct {
	Messages []ChatMessageJSON `json:"messages"`
	Mode     string            `json:"mode"`
	Stream   *bool             `json:"stream"`
}

// statelessChat answers a conversation the client keeps itself: the last
// message is the question, the earlier ones its history. The answer is the
// same typed SSE stream as a session's (or, with "stream": false, the
// finished message as JSON), and nothing is saved. While its requester is
// connected, the stream can also be followed and stopped under
// /api/v1/streams/{id} like any other (X-Message-Id names it); when the
// requester leaves, the generation is stopped.
func (h *Handler) statelessChat(c *gin.Context) {
	cfg := h.cfg()
	var req statelessChatRequest
	if rerr := decodeJSON(c, cfg.Limits.MaxBodyBytes, &req, false); rerr != nil {
		abort(c, rerr.status, rerr.code, rerr.message)
		return
	}
	turns, question, rerr := statelessTurns(req.Messages, cfg.Limits.MaxQuestionChars)
	if rerr != nil {
		abort(c, rerr.status, rerr.code, rerr.message)
		return
	}
	if !h.checkMode(c, req.Mode) {
		return
	}
	r, ok, err := h.startLimited(c, 1, func() (*run.Run, error) {
		return h.deps.Runs.StartStateless(c.Request.Context(), run.StatelessRequest{
			TenantID: tenant(c), Mode: req.Mode, History: turns, Question: question})
	}, func(msg string) { abort(c, http.StatusTooManyRequests, "too_many_streams", msg) })
	if !ok {
		return
	}
	switch {
	case errors.Is(err, run.ErrUnknownMode): // the default mode vanished in a reload
		abort(c, http.StatusBadRequest, "unknown_mode", h.unknownModeMessage(req.Mode))
		return
	case errors.Is(err, run.ErrShuttingDown):
		abort(c, http.StatusServiceUnavailable, "shutting_down", "The server is restarting; try again in a moment.")
		return
	case err != nil:
		h.internal(c, "start stateless answer", err)
		return
	}
	h.answer(c, r.StreamID, req.Stream == nil || *req.Stream, true)
	select {
	case <-r.Done():
	default:
		// The answer returned before the run ended: its requester left.
		// Nothing is saved, so nobody could read the rest; stop paying the
		// provider for it (as /v1/chat/completions does).
		h.deps.Runs.Stop(r.StreamID)
	}
}

// statelessTurns checks a stateless conversation and splits it into the
// history and the question (the last message, which must be the user's).
func statelessTurns(msgs []ChatMessageJSON, maxQuestion int) ([]conversation.Message, string, *requestError) {
	if len(msgs) == 0 {
		return nil, "", &requestError{http.StatusBadRequest, "empty_messages",
			`"messages" is empty; send the conversation, ending with the user's question.`}
	}
	turns := make([]conversation.Message, 0, len(msgs)-1)
	for i, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, "", &requestError{http.StatusBadRequest, "invalid_role", fmt.Sprintf(
				`messages[%d].role is %q; it must be "user" or "assistant" (the system prompt is set in config.yaml).`, i, m.Role)}
		}
		if !utf8.ValidString(m.Content) {
			return nil, "", &requestError{http.StatusBadRequest, "invalid_content",
				fmt.Sprintf("messages[%d].content is not valid UTF-8 text.", i)}
		}
		if i < len(msgs)-1 {
			turns = append(turns, conversation.Message{Role: m.Role, Content: m.Content})
		}
	}
	last := msgs[len(msgs)-1]
	if last.Role != "user" {
		return nil, "", &requestError{http.StatusBadRequest, "no_question",
			"The last message must be the user's question."}
	}
	if strings.TrimSpace(last.Content) == "" {
		return nil, "", &requestError{http.StatusBadRequest, "empty_content", "The question (the last message) is empty."}
	}
	if n := utf8.RuneCountInString(last.Content); n > maxQuestion {
		return nil, "", &requestError{http.StatusBadRequest, "content_too_long",
			fmt.Sprintf("The question is %d characters long; the limit is %d.", n, maxQuestion)}
	}
	return turns, last.Content, nil
}

// liveStatelessRun returns the caller's stateless run of stream id while
// it runs here. Stateless streams have no saved message to check the owner
// against, so they can be resumed and stopped only while live.
func (h *Handler) liveStatelessRun(c *gin.Context, id string) bool {
	r, ok := h.deps.Runs.Lookup(id)
	return ok && r.SessionID == "" && r.TenantID == tenant(c)
}

// resumeAnyStream resumes a session's stream, or a live stateless one.
func (h *Handler) resumeAnyStream(c *gin.Context) {
	if !h.liveStatelessRun(c, c.Param("id")) {
		h.resumeStream(c)
		return
	}
	after, ok := ParseCursor(c.GetHeader("Last-Event-ID"), c.Query("after"))
	if !ok {
		abort(c, http.StatusBadRequest, "invalid_cursor",
			"The resume position (Last-Event-ID or ?after=) must be a whole number: the seq of the last event received.")
		return
	}
	h.serveStream(c, c.Param("id"), after, false)
}

// stopAnyStream stops a session's stream, or a live stateless one.
func (h *Handler) stopAnyStream(c *gin.Context) {
	id := c.Param("id")
	if h.liveStatelessRun(c, id) && h.deps.Runs.Stop(id) {
		c.JSON(http.StatusAccepted, gin.H{"status": "stopping", "message_id": id})
		return
	}
	h.stopStream(c)
}

// listModes lists the chat modes a question may name, and the models that
// may answer side by side ("models" of a question), for clients that
// offer a choice (the web page's selectors); "titles" says whether the
// server titles new chats itself (a client then creates them untitled,
// since a title it gives is the user's and is never replaced).
func (h *Handler) listModes(c *gin.Context) {
	cfg := h.cfg()
	models := slices.Sorted(maps.Keys(cfg.Models))
	c.JSON(http.StatusOK, gin.H{"modes": h.deps.Modes(), "default": cfg.DefaultMode, "models": models,
		"titles": cfg.Titles.Enabled})
}
