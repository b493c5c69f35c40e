package handler

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/chatpipe/chatpipe/internal/auth"
	"github.com/chatpipe/chatpipe/internal/history"
)

const (
	tenantKey       = "chatpipe.tenant"
	manageSharedKey = "chatpipe.manage_shared"
)

// authenticate resolves the caller's tenant from its API key (Authorization:
// Bearer <key>). With no keys configured every caller is the default
// tenant. GET requests on streams may carry the key as ?access_token=,
// since a browser's EventSource cannot set headers.
func (h *Handler) authenticate(c *gin.Context) {
	keys := h.deps.Auth()
	if keys.Open() {
		// The open mode is one local user: it manages the shared
		// documents too.
		c.Set(tenantKey, auth.DefaultTenant)
		c.Set(manageSharedKey, true)
		return
	}
	if h.authThrottled(c, func(msg string) { abort(c, http.StatusTooManyRequests, "auth_rate_limited", msg) }) {
		return
	}
	token := ""
	if scheme, value, ok := strings.Cut(c.GetHeader("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		token = strings.TrimSpace(value)
	}
	if token == "" && c.Request.Method == http.MethodGet && strings.HasPrefix(c.FullPath(), "/api/v1/streams/") {
		token = c.Query("access_token")
	}
	if token == "" {
		h.authFailed(c)
		c.Header("WWW-Authenticate", `Bearer realm="chatpipe"`)
		abort(c, http.StatusUnauthorized, "unauthorized", "This API needs a key: send it as \"Authorization: Bearer <key>\".")
		return
	}
	tenant, manage, ok := keys.Lookup(token)
	if !ok {
		h.authFailed(c)
		c.Header("WWW-Authenticate", `Bearer realm="chatpipe", error="invalid_token"`)
		abort(c, http.StatusUnauthorized, "unauthorized", "The API key is not valid.")
		return
	}
	c.Set(tenantKey, tenant)
	c.Set(manageSharedKey, manage)
}

// tenant is the caller's tenant, set by authenticate.
func tenant(c *gin.Context) string { return c.GetString(tenantKey) }

// managesShared reports whether the caller's key may add and delete
// shared documents, set by authenticate.
func managesShared(c *gin.Context) bool { return c.GetBool(manageSharedKey) }

// ownedStream checks that stream id is an answer in one of the caller's
// sessions and answers 404 itself when it is not: another tenant's stream
// looks exactly like one that does not exist.
func (h *Handler) ownedStream(c *gin.Context, id string) (history.Message, bool) {
	ctx := c.Request.Context()
	msg, err := h.deps.History.GetMessage(ctx, id)
	if err == nil && msg.Role == history.RoleAssistant {
		var sess history.Session
		sess, err = h.deps.History.GetSession(ctx, msg.SessionID)
		if err == nil && sess.TenantID == tenant(c) {
			return msg, true
		}
		if err == nil {
			err = history.ErrNotFound
		}
	} else if err == nil {
		err = history.ErrNotFound
	}
	if errors.Is(err, history.ErrNotFound) {
		abort(c, http.StatusNotFound, "stream_not_found", "No stream with id "+strconv.Quote(id)+".")
	} else {
		h.internal(c, "find stream", err)
	}
	return msg, false
}
