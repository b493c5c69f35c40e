package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
)

// Protocols of the OTLP exporter.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Options configure tracing (the composition root maps telemetry.traces
// onto them).
type Options struct {
	// Enabled turns tracing on. It is also on, whatever Enabled says, when
	// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
	// set; OTEL_SDK_DISABLED=true turns it off.
	Enabled bool
	// Protocol is http/protobuf or grpc; "" = OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
	// or OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf.
	Protocol string
	// Endpoint is the collector's URL (http://collector:4318, or
	// http://collector:4317 for grpc); "" = the OTEL_* variables', else
	// localhost.
	Endpoint string
	// Headers are sent with every export (e.g. an API key), added to
	// OTEL_EXPORTER_OTLP_HEADERS'.
	Headers map[string]string
	// SamplingRatio is the share of new traces kept (0..1); a request
	// arriving with a sampled traceparent is always kept.
	SamplingRatio float64
	// ServiceName is service.name, unless OTEL_SERVICE_NAME is set.
	ServiceName string
	// Timeout bounds one export, its retries included.
	Timeout time.Duration
	// BatchTimeout is the longest a finished span waits to be exported.
	BatchTimeout time.Duration
	Logger       *zap.Logger
}

// Tracing is the app's tracer provider; its zero value (and nil) is off.
type Tracing struct {
	provider trace.TracerProvider
	sdk      *sdktrace.TracerProvider // nil when off
	client   *http.Client             // the HTTP exporter's, closed on Shutdown
	endpoint string
}

// Off is tracing turned off: the no-op provider.
func Off() *Tracing { return &Tracing{provider: noop.NewTracerProvider()} }

// New sets tracing up from opts and the OTEL_* environment. It starts the
// exporter's batch goroutine; Shutdown ends it.
func New(ctx context.Context, opts Options) (*Tracing, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if !enabled(opts) {
		return Off(), nil
	}
	t := &Tracing{}
	exp, err := t.exporter(opts)
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", cmpOr(opts.ServiceName, "chatpipe"))}
	// WithFromEnv last: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry.traces: resource: %w", err)
	}
	tpOpts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithBatcher(&warnOnce{SpanExporter: exp, log: opts.Logger, endpoint: t.endpoint},
			sdktrace.WithBatchTimeout(cmpOr(opts.BatchTimeout, 5*time.Second))),
	}
	if os.Getenv("OTEL_TRACES_SAMPLER") == "" { // else the SDK reads the variable
		tpOpts = append(tpOpts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(opts.SamplingRatio))))
	}
	t.sdk = sdktrace.NewTracerProvider(tpOpts...)
	t.provider = t.sdk
	opts.Logger.Info("tracing on", zap.String("endpoint", t.endpoint), zap.Float64("sampling_ratio", opts.SamplingRatio))
	return t, nil
}

// enabled decides whether tracing is on.
func enabled(opts Options) bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return opts.Enabled || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" ||
		os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Protocol resolves the exporter protocol of opts and the environment.
func Protocol(opts Options) string {
	return cmpOr(opts.Protocol, os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
		os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), ProtocolHTTP)
}

func (t *Tracing) exporter(opts Options) (sdktrace.SpanExporter, error) {
	timeout := cmpOr(opts.Timeout, 10*time.Second)
	switch p := Protocol(opts); p {
	case ProtocolHTTP:
		t.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		o := []otlptracehttp.Option{otlptracehttp.WithHTTPClient(t.client), otlptracehttp.WithTimeout(timeout),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 500 * time.Millisecond,
				MaxInterval: 5 * time.Second, MaxElapsedTime: timeout})}
		if opts.Endpoint != "" {
			u, err := endpointURL(opts.Endpoint, "4318")
			if err != nil {
				return nil, err
			}
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/traces"
			}
			o = append(o, otlptracehttp.WithEndpointURL(u.String()))
		}
		if len(opts.Headers) > 0 {
			o = append(o, otlptracehttp.WithHeaders(opts.Headers))
		}
		t.endpoint = endpointName(opts, "4318")
		return otlptracehttp.New(context.Background(), o...)
	case ProtocolGRPC:
		o := []otlptracegrpc.Option{otlptracegrpc.WithTimeout(timeout),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true, InitialInterval: 500 * time.Millisecond,
				MaxInterval: 5 * time.Second, MaxElapsedTime: timeout})}
		if opts.Endpoint != "" {
			u, err := endpointURL(opts.Endpoint, "4317")
			if err != nil {
				return nil, err
			}
			o = append(o, otlptracegrpc.WithEndpointURL(u.String()))
		}
		if len(opts.Headers) > 0 {
			o = append(o, otlptracegrpc.WithHeaders(opts.Headers))
		}
		t.endpoint = endpointName(opts, "4317")
		return otlptracegrpc.New(context.Background(), o...)
	default:
		return nil, fmt.Errorf("telemetry.traces.protocol: unknown protocol %q (want %s or %s)", p, ProtocolHTTP, ProtocolGRPC)
	}
}

// endpointURL parses telemetry.traces.endpoint (port: the protocol's, for
// the example in the error).
func endpointURL(endpoint, port string) (*url.URL, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("telemetry.traces.endpoint: want a URL like http://collector:%s, got %q", port, endpoint)
	}
	return u, nil
}

// endpointName is where spans go, for the log: the configured endpoint,
// the OTEL_* variables', or the exporter's default on localhost.
func endpointName(opts Options, port string) string {
	return cmpOr(opts.Endpoint, os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
		os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "http://localhost:"+port)
}

// Provider is the tracer provider (the no-op one when off).
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil || t.provider == nil {
		return noop.NewTracerProvider()
	}
	return t.provider
}

// On reports whether spans are exported.
func (t *Tracing) On() bool { return t != nil && t.sdk != nil }

// Tracer is chatpipe's tracer of the provider.
func (t *Tracing) Tracer() trace.Tracer { return t.Provider().Tracer(ScopeName) }

// ForceFlush exports the spans ended so far.
func (t *Tracing) ForceFlush(ctx context.Context) error {
	if !t.On() {
		return nil
	}
	return t.sdk.ForceFlush(ctx)
}

// Shutdown exports what is left and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.On() {
		return nil
	}
	err := t.sdk.Shutdown(ctx)
	if t.client != nil {
		t.client.CloseIdleConnections()
	}
	return err
}

// Propagator reads and writes the W3C traceparent and baggage headers.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(
	propagation.TraceContext{}, propagation.Baggage{})

// warnOnce logs the first failed export of an outage at warn (not every
// batch) and swallows the error: tracing must never disturb answers, and
// the SDK's global handler would print every failure.
type warnOnce struct {
	sdktrace.SpanExporter
	log      *zap.Logger
	endpoint string
	failing  atomic.Bool
}

func (w *warnOnce) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := w.SpanExporter.ExportSpans(ctx, spans)
	if err != nil && !errors.Is(err, context.Canceled) {
		if w.failing.CompareAndSwap(false, true) {
			w.log.Warn("trace export failed; spans are dropped until the collector answers again (answers are not affected)",
				zap.String("endpoint", w.endpoint), zap.Error(err))
		}
		return nil
	}
	if err == nil && w.failing.CompareAndSwap(true, false) {
		w.log.Info("trace export works again", zap.String("endpoint", w.endpoint))
	}
	return nil
}

func cmpOr[T comparable](vals ...T) T {
	var zero T
	for _, v := range vals {
		if v != zero {
			return v
		}
	}
	return zero
}
