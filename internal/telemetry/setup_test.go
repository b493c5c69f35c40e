package telemetry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/internal/telemetry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTracingIsOffUnlessConfiguredOrTheEnvironmentNamesAnEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		enabled bool
		env     map[string]string
		on      bool
	}{
		{"default", false, nil, false},
		{"config", true, nil, true},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, true},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", false, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"}, true},
		{"OTEL_SDK_DISABLED", true, map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
		{"grpc from the environment", false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			tr, err := telemetry.New(context.Background(), telemetry.Options{Enabled: tc.enabled, SamplingRatio: 1, Timeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Shutdown(context.Background())
			if tr.On() != tc.on {
				t.Fatalf("on = %v, want %v", tr.On(), tc.on)
			}
			_, span := tr.Tracer().Start(context.Background(), "x")
			if span.IsRecording() != tc.on {
				t.Errorf("span recording = %v", span.IsRecording())
			}
			span.End()
		})
	}
}

func TestBadExporterSettingsNameTheKey(t *testing.T) {
	for _, opts := range []telemetry.Options{
		{Enabled: true, Protocol: "carrier-pigeon"},
		{Enabled: true, Endpoint: "collector:4318"},
	} {
		_, err := telemetry.New(context.Background(), opts)
		if err == nil || !strings.Contains(err.Error(), "telemetry.traces.") {
			t.Errorf("New(%+v) = %v, want an error naming the key", opts, err)
		}
	}
}
