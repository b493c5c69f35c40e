// Package handler is chatpipe's HTTP API: sessions, messages answered as
// typed Server-Sent Events, stream resume and stop, health. It turns
// requests into calls on the run manager and the stores, and every failure
// into a JSON error a user can read.
package handler

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/auth"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/metrics"
	"github.com/chatpipe/chatpipe/internal/run"
	"github.com/chatpipe/chatpipe/internal/stream"
	"github.com/chatpipe/chatpipe/internal/telemetry"
)

// Deps are what the handlers use.
type Deps struct {
	Hub       *Hub                  // nil = every SSE reader keeps its handler goroutine
	Auth      func() *auth.Keys     // the current API keys
	Metrics   *metrics.Metrics      // nil = metrics off
	Config    func() *config.Config // the current snapshot
	Modes     func() []string       // chat modes of the current snapshot
	History   history.Store
	Knowledge *knowledge.Service
	Streams   stream.Store
	Runs      *run.Manager
	Logger    *zap.Logger
	// Ready reports whether the server can take traffic (stores reachable,
	// not shutting down).
	Ready func(ctx context.Context) error
	// MCP serves /mcp (internal/mcpserver); nil = no MCP endpoint.
	MCP http.Handler
	// Tracer starts each request's span (nil = no tracing).
	Tracer trace.Tracer
	// Traces serves the turn inspector's records (nil = the store keeps
	// none; telemetry.inspector.enabled is read per request).
	Traces history.TraceStore
}

// Handler serves the API.
type Handler struct {
	deps      Deps
	log       *zap.Logger
	limits    *limiter
	authFails *authFailures
	tracer    trace.Tracer
}

// New returns the API's http.Handler.
//
// Handlers pass c.Request.Context() to stores, never the *gin.Context
// itself: gin recycles contexts after a request, while a store (SQLite's
// interrupt watcher, for one) may still be watching Done.
func New(deps Deps) http.Handler {
	if deps.Logger == nil {
		deps.Logger = zap.NewNop()
	}
	h := &Handler{deps: deps, log: deps.Logger, limits: newLimiter(), authFails: newAuthFailures(), tracer: deps.Tracer}
	if h.tracer == nil {
		h.tracer = noop.NewTracerProvider().Tracer(telemetry.ScopeName)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	// The client's address (limits, failed-auth throttling) comes from
	// X-Forwarded-For/X-Real-IP only when the peer is a configured proxy;
	// gin's default believes anyone, which lets a client escape every
	// per-IP limit by forging the header. Validated by config.
	_ = r.SetTrustedProxies(deps.Config().Server.TrustedProxies)
	r.Use(h.limitBodyRead, h.traceRequest, h.accessLog, gin.CustomRecoveryWithWriter(nil, h.recovered), h.cors)
	r.NoRoute(func(c *gin.Context) {
		abort(c, http.StatusNotFound, "not_found", "No such endpoint: "+c.Request.Method+" "+quotedPath(c)+".")
	})
	r.NoMethod(func(c *gin.Context) {
		abort(c, http.StatusMethodNotAllowed, "method_not_allowed",
			"Method "+c.Request.Method+" is not allowed on "+quotedPath(c)+".")
	})

	r.GET("/", h.webPage)
	r.GET("/assets/:file", h.webAsset)
	r.GET("/healthz", h.healthz)
	r.GET("/readyz", h.readyz)
	if deps.Metrics != nil {
		r.GET(deps.Config().Metrics.Path, gin.WrapH(deps.Metrics.Handler()))
	}
	if deps.Config().Server.Pprof {
		routePprof(r)
	}

	api := r.Group("/api/v1", h.authenticate, h.rateLimit)
	api.POST("/sessions", h.createSession)
	api.GET("/sessions", h.listSessions)
	api.GET("/sessions/:id", h.getSession)
	api.DELETE("/sessions/:id", h.deleteSession)
	api.PATCH("/sessions/:id", h.patchSession)
	api.POST("/messages", h.postMessage) // a first question, opening its session
	api.POST("/messages/:id/regenerate", h.regenerate)
	api.GET("/sessions/:id/messages", h.listMessages)
	api.GET("/messages/:id/trace", h.messageTrace)
	api.POST("/sessions/:id/messages", h.postMessage)
	api.GET("/streams/:id", h.resumeAnyStream)     // sessions' streams and live stateless ones
	api.POST("/streams/:id/stop", h.stopAnyStream) // likewise
	api.POST("/streams/:id/approvals/:tool_call_id", h.decideApproval)
	api.PUT("/messages/:id/feedback", h.putFeedback)
	api.DELETE("/messages/:id/feedback", h.deleteFeedback)
	api.GET("/feedback", h.exportFeedback)
	api.POST("/chat", h.statelessChat)
	api.GET("/modes", h.listModes)
	api.POST("/knowledge/documents", h.addDocument)
	api.GET("/knowledge/documents", h.listDocuments)
	api.GET("/knowledge/documents/:id", h.getDocument)
	api.DELETE("/knowledge/documents/:id", h.deleteDocument)
	api.POST("/knowledge/search", h.search)

	if deps.MCP != nil {
		r.Any("/mcp", h.authenticate, h.rateLimit, h.mcp)
	}

	oai := r.Group("/v1", h.openAIAuthenticate, h.rateLimit)
	oai.GET("/models", h.listModels)
	oai.GET("/models/:model", h.getModel)
	oai.POST("/chat/completions", h.chatCompletions)
	return r
}

func (h *Handler) cfg() *config.Config { return h.deps.Config() }

// accessLog writes one line per request: never a body, never a header.
func (h *Handler) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	h.logRequest(c, start)
}

// logRequest is accessLog's after part, in its own frame: a live stream's
// handler goroutine rests under accessLog (see streamTail). A stream
// handed to the hub is logged when it is handed over: its duration is the
// time to its first frames, not the answer's.
func (h *Handler) logRequest(c *gin.Context, start time.Time) {
	d := time.Since(start)
	fields := []zap.Field{
		zap.String("method", c.Request.Method),
		zap.String("route", c.FullPath()),
		zap.Int("status", c.Writer.Status()),
		zap.Duration("duration", d),
	}
	if id := telemetry.TraceID(c.Request.Context()); id != "" {
		fields = append(fields, zap.String("trace_id", id))
	}
	h.log.Info("request", fields...)
	if h.deps.Metrics != nil {
		h.deps.Metrics.HTTP(c.FullPath(), c.Request.Method, c.Writer.Status(), d)
	}
}

// reqLog is the handler's logger with the request's trace id, when the
// request is traced, so every line a request logs can be found from its
// trace.
func (h *Handler) reqLog(c *gin.Context) *zap.Logger {
	if id := telemetry.TraceID(c.Request.Context()); id != "" {
		return h.log.With(zap.String("trace_id", id))
	}
	return h.log
}

// recovered answers a panic in a handler with a 500 and no stack trace.
func (h *Handler) recovered(c *gin.Context, v any) {
	h.log.Error("handler panicked", zap.Any("panic", v), zap.Stack("stack"))
	abort(c, http.StatusInternalServerError, "internal_error", "Something went wrong on the server.")
}

func (h *Handler) healthz(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) }

func (h *Handler) readyz(c *gin.Context) {
	if h.deps.Ready != nil {
		ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
		defer cancel()
		if err := h.deps.Ready(ctx); err != nil {
			h.reqLog(c).Warn("not ready", zap.Error(err))
			abort(c, http.StatusServiceUnavailable, "not_ready", "The server is not ready to take requests.")
			return
		}
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}

// quotedPath is the request's path for a message: quoted, so that the
// sentence's full stop is not read as part of it ("/documents/".), and
// cut to 200 bytes.
func quotedPath(c *gin.Context) string {
	p := c.Request.URL.Path
	if len(p) > 200 {
		p = strings.ToValidUTF8(p[:200], "") + "…"
	}
	return strconv.Quote(p)
}
