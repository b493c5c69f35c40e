package handler

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"
)

// cors lets the browser frontends listed in cors.allowed_origins call the
// API, answering preflight requests itself. Keys travel in the
// Authorization header, never in cookies, so no credentials mode is needed.
func (h *Handler) cors(c *gin.Context) {
	origin := c.GetHeader("Origin")
	if origin == "" {
		return
	}
	cfg := h.cfg().CORS
	if !slices.Contains(cfg.AllowedOrigins, origin) && !slices.Contains(cfg.AllowedOrigins, "*") {
		return // the browser enforces the missing header
	}
	w := c.Writer.Header()
	w.Set("Access-Control-Allow-Origin", origin)
	w.Add("Vary", "Origin")
	w.Set("Access-Control-Expose-Headers", "X-Message-Id, Retry-After")
	if c.Request.Method == http.MethodOptions && c.GetHeader("Access-Control-Request-Method") != "" {
		w.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
		w.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
		w.Set("Access-Control-Max-Age", strconv.Itoa(int(cfg.MaxAge.Seconds())))
		c.AbortWithStatus(http.StatusNoContent)
	}
}
