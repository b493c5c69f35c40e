package handler

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/internal/history"
)

// maxCursor bounds a resume cursor; no stream gets near it.
const maxCursor = 1 << 40

// ParseCursor reads a resume cursor: the Last-Event-ID header (sent by an
// EventSource when it reconnects, so it wins) or the `after` query
// parameter (fetch clients, page reloads). Absent means from the start.
func ParseCursor(lastEventID, after string) (int64, bool) {
	raw := strings.TrimSpace(lastEventID)
	if raw == "" {
		// Not trimmed: "?after=+5" arrives as " 5", and a cursor with a
		// sign or spaces is a client bug to report, not to guess at.
		raw = after
	}
	if raw == "" {
		return 0, true
	}
	if raw[0] < '0' || raw[0] > '9' { // ParseInt would take "+5"; a seq is digits only
		return 0, false
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 || n > maxCursor {
		return 0, false
	}
	return n, true
}

// resumeStream replays a stream after the client's cursor and tails it.
func (h *Handler) resumeStream(c *gin.Context) {
	after, ok := ParseCursor(c.GetHeader("Last-Event-ID"), c.Query("after"))
	if !ok {
		abort(c, http.StatusBadRequest, "invalid_cursor",
			"The resume position (Last-Event-ID or ?after=) must be a whole number: the seq of the last event received.")
		return
	}
	if _, ok := h.ownedStream(c, c.Param("id")); !ok {
		return
	}
	h.serveStream(c, c.Param("id"), after, false)
}

// stopStream cancels a live generation: 202 when it is being stopped, 200
// when it had already finished, 404 when the id is unknown.
func (h *Handler) stopStream(c *gin.Context) {
	id := c.Param("id")
	msg, ok := h.ownedStream(c, id)
	if !ok {
		return
	}
	stopping, err := h.deps.Runs.StopAnywhere(c.Request.Context(), id)
	if err != nil {
		h.reqLog(c).Warn("asking other replicas to stop failed", zap.String("stream_id", id), zap.Error(err))
	}
	if stopping {
		c.JSON(http.StatusAccepted, gin.H{"status": "stopping", "message_id": id})
		return
	}
	if msg.Status == history.StatusStreaming { // it finished between the two reads
		if m, err := h.deps.History.GetMessage(c.Request.Context(), id); err == nil {
			msg = m
		}
	}
	c.JSON(http.StatusOK, gin.H{"status": msg.Status, "message_id": id})
}
