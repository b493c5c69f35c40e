// Package metrics exposes chatpipe's Prometheus metrics. Names follow the
// OpenTelemetry GenAI semantic conventions where one exists
// (gen_ai.server.time_to_first_token → gen_ai_server_time_to_first_token_seconds);
// the rest are chatpipe_*.
//
// Nothing here runs per token: stream metrics come from a handful of
// lifecycle events per stream, and the SSE writer adds its event and byte
// counts once per flushed batch.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/run"
)

// Metrics is one registry of chatpipe's metrics.
type Metrics struct {
	reg *prometheus.Registry

	ttft          *prometheus.HistogramVec
	perToken      *prometheus.HistogramVec
	stage         *prometheus.HistogramVec
	streams       *prometheus.CounterVec
	active        prometheus.Gauge
	tokens        *prometheus.CounterVec
	estimated     *prometheus.CounterVec
	errors        *prometheus.CounterVec
	sseEvents     prometheus.Counter
	sseBytes      prometheus.Counter
	httpRequests  *prometheus.CounterVec
	httpDurations *prometheus.HistogramVec
	mcp           mcpMetrics  // mcp.go
	meta          metaMetrics // meta.go
}

// latencyBuckets span a fast stage (1 ms) to a long generation (2 min).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// New registers every metric, plus the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gen_ai_server_time_to_first_token_seconds", Help: "Time from the model request to its first thinking or answer token.",
		Buckets: latencyBuckets}, []string{"mode"})
	m.perToken = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gen_ai_server_time_per_output_token_seconds", Help: "Time per output token after the first.",
		Buckets: []float64{.001, .0025, .005, .01, .02, .04, .08, .16, .32}}, []string{"mode"})
	m.stage = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "chatpipe_stage_duration_seconds", Help: "Time each pipeline stage took.",
		Buckets: latencyBuckets}, []string{"stage", "status"})
	m.streams = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatpipe_streams_total", Help: "Finished streams by mode and status (completed, stopped, failed)."},
		[]string{"mode", "status"})
	m.active = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "chatpipe_active_streams", Help: "Generations running in this process."})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gen_ai_client_token_usage_total", Help: "Tokens used, by type (input, output, reasoning)."},
		[]string{"mode", "type"})
	m.estimated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatpipe_token_usage_estimated_total",
		Help: "The part of gen_ai_client_token_usage_total that was estimated (the provider sent no usage: stopped or failed calls)."},
		[]string{"mode", "type"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatpipe_errors_total", Help: "Error events by code (provider_error, rate_limited, timeout, …) and stage."},
		[]string{"code", "stage"})
	m.sseEvents = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "chatpipe_sse_events_total", Help: "Events written to SSE connections (a resumed event counts again)."})
	m.sseBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "chatpipe_sse_bytes_total", Help: "Bytes written to SSE connections."})
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatpipe_http_requests_total", Help: "HTTP requests by route, method and status."},
		[]string{"route", "method", "status"})
	m.httpDurations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "chatpipe_http_request_duration_seconds", Help: "HTTP request duration (a streamed answer counts to its end).",
		Buckets: latencyBuckets}, []string{"route", "method"})
	for _, c := range []prometheus.Collector{m.ttft, m.perToken, m.stage, m.streams, m.active, m.tokens, m.estimated, m.errors,
		m.sseEvents, m.sseBytes, m.httpRequests, m.httpDurations,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	m.registerMCP()
	m.registerMeta()
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// GaugeFunc registers a gauge read at scrape time (e.g. the stream store's size).
func (m *Metrics) GaugeFunc(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}

// HTTP records one finished request.
func (m *Metrics) HTTP(route, method string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched" // never the raw path: ids would explode the series
	}
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.httpDurations.WithLabelValues(route, method).Observe(d.Seconds())
}

// SSEWritten records a flushed batch of events.
func (m *Metrics) SSEWritten(events, bytes int) {
	m.sseEvents.Add(float64(events))
	m.sseBytes.Add(float64(bytes))
}

// Observer returns the run observer that feeds the stream metrics: it
// subscribes to lifecycle events only, never to deltas.
func (m *Metrics) Observer() run.Observer {
	return func(bus *eventbus.Bus, info run.Info) {
		o := &streamObserver{m: m, mode: info.Mode}
		m.active.Inc()
		bus.Subscribe(o.handle, eventbus.TypeStage, eventbus.TypeUsage, eventbus.TypeError, eventbus.TypeStreamFinished)
	}
}

type streamObserver struct {
	m    *Metrics
	mode string
}

func (o *streamObserver) handle(ev *eventbus.Event) {
	switch p := ev.Payload.(type) {
	case eventbus.Stage:
		if p.Status != eventbus.StageStarted {
			o.m.stage.WithLabelValues(p.Name, p.Status).Observe(float64(p.ElapsedMS) / 1000)
		}
	case eventbus.Usage:
		if p.TTFTMS > 0 || p.CompletionTokens > 0 { // 0 ms with tokens: a sub-millisecond first token
			o.m.ttft.WithLabelValues(o.mode).Observe(float64(p.TTFTMS) / 1000)
		}
		if p.CompletionTokens > 1 && p.TotalMS > p.TTFTMS {
			o.m.perToken.WithLabelValues(o.mode).Observe(float64(p.TotalMS-p.TTFTMS) / 1000 / float64(p.CompletionTokens-1))
		}
		o.m.tokens.WithLabelValues(o.mode, "input").Add(float64(p.PromptTokens))
		o.m.tokens.WithLabelValues(o.mode, "output").Add(float64(p.CompletionTokens))
		o.m.tokens.WithLabelValues(o.mode, "reasoning").Add(float64(p.ReasoningTokens))
		if p.Estimated {
			o.m.estimated.WithLabelValues(o.mode, "input").Add(float64(p.PromptTokens))
			o.m.estimated.WithLabelValues(o.mode, "output").Add(float64(p.CompletionTokens))
		}
	case eventbus.Error:
		o.m.errors.WithLabelValues(p.Code, p.Stage).Inc()
	case eventbus.Finished:
		o.m.streams.WithLabelValues(o.mode, p.Status).Inc()
		o.m.active.Dec()
	}
}
