package handler

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/telemetry"
)

// messageTrace serves the turn inspector's record of an assistant
// message: what each stage did for that answer. Another tenant's message
// is a 404, like a message that does not exist.
func (h *Handler) messageTrace(c *gin.Context) {
	if h.deps.Traces == nil || !h.cfg().Telemetry.Inspector.Enabled {
		abort(c, http.StatusNotFound, "inspector_off",
			"The turn inspector is off on this server (telemetry.inspector.enabled).")
		return
	}
	data, _, err := h.deps.Traces.GetTrace(c.Request.Context(), tenant(c), c.Param("id"))
	switch {
	case errors.Is(err, history.ErrNotFound):
		abort(c, http.StatusNotFound, "not_found",
			"There is no inspector record for this message: it does not exist, is not an answer, is still being written, "+
				"is older than the inspector's retention, or its chat mode is not inspected.")
	case err != nil:
		h.internal(c, "get message trace", err)
	default:
		c.Data(http.StatusOK, "application/json; charset=utf-8", data)
	}
}

// traceRequest starts the request's span (a child of an incoming
// traceparent) and puts it in the request's context, where the run finds
// it: the generation's spans join the same trace.
func (h *Handler) traceRequest(c *gin.Context) {
	span := h.startRequestSpan(c)
	c.Next()
	endRequestSpan(c, span)
}

// startRequestSpan and endRequestSpan are traceRequest's before and after
// parts, in their own frames: a live stream's handler goroutine rests
// under traceRequest (see streamTail).
func (h *Handler) startRequestSpan(c *gin.Context) trace.Span {
	ctx := telemetry.Propagator.Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header))
	route := c.FullPath()
	name := c.Request.Method + " " + route
	if route == "" {
		name = c.Request.Method
	}
	ctx, span := h.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
	if span.IsRecording() {
		span.SetAttributes(attribute.String("http.request.method", c.Request.Method),
			attribute.String("http.route", route), attribute.String("url.path", c.Request.URL.Path))
	}
	c.Request = c.Request.WithContext(ctx)
	return span
}

func endRequestSpan(c *gin.Context, span trace.Span) {
	if span.IsRecording() {
		status := c.Writer.Status()
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	}
	span.End()
}
