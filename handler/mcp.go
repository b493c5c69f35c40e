package handler

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/chatpipe/chatpipe/internal/auth"
)

// mcp serves the MCP endpoint (internal/mcpserver) to an authenticated
// caller: the tenant of its API key travels in the request's context.
func (h *Handler) mcp(c *gin.Context) {
	cfg := h.cfg()
	if !cfg.MCP.Server.Enabled {
		abort(c, http.StatusNotFound, "not_found", "The MCP endpoint is turned off (mcp.server.enabled).")
		return
	}
	// An ask streams progress for as long as its answer runs: give the
	// response the generation's bound, not one write's.
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(cfg.Stream.MaxDuration + time.Minute))
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, cfg.Limits.MaxBodyBytes)
	req := c.Request.WithContext(auth.WithTenant(c.Request.Context(), tenant(c)))
	h.deps.MCP.ServeHTTP(c.Writer, req)
}
