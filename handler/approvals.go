package handler

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/run"
)

type approvalRequest struct {
	Decision string `json:"decision"` // allow | deny
}

// decideApproval answers a tool call's approval request: POST
// /api/v1/streams/{id}/approvals/{tool_call_id} {"decision": "allow"|"deny"}.
// Like stop, it is the stream owner's and may land on any replica: 202 when
// the decision was delivered to the waiting call, 404 when no call of that
// id waits (unknown, already decided, timed out, or the answer ended).
func (h *Handler) decideApproval(c *gin.Context) {
	id, callID := c.Param("id"), c.Param("tool_call_id")
	var req approvalRequest
	if rerr := decodeJSON(c, h.cfg().Limits.MaxBodyBytes, &req, false); rerr != nil {
		abort(c, rerr.status, rerr.code, rerr.message)
		return
	}
	if req.Decision != eventbus.DecisionAllow && req.Decision != eventbus.DecisionDeny {
		abort(c, http.StatusBadRequest, "invalid_decision", `"decision" must be "allow" or "deny".`)
		return
	}
	if !h.liveStatelessRun(c, id) {
		if _, ok := h.ownedStream(c, id); !ok {
			return
		}
	}
	err := h.deps.Runs.Decide(c.Request.Context(), id, callID, req.Decision)
	switch {
	case err == nil:
		c.JSON(http.StatusAccepted, gin.H{"status": "accepted", "tool_call_id": callID, "decision": req.Decision})
	case errors.Is(err, run.ErrNoPendingApproval):
		abort(c, http.StatusNotFound, "approval_not_found",
			"No tool call "+strconv.Quote(callID)+" of this stream is waiting for a decision.")
	default:
		h.internal(c, "deliver approval decision", err)
	}
}
