package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// Durations in the JSON log carry their unit.
func TestLogDurationsCarryTheirUnit(t *testing.T) {
	enc := zapcore.NewJSONEncoder(encoderConfig(false))
	buf, err := enc.EncodeEntry(zapcore.Entry{Message: "shutting down", Time: time.Unix(0, 0)},
		[]zapcore.Field{zap.Duration("grace", 20*time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if line := buf.String(); !strings.Contains(line, `"grace":"20s"`) {
		t.Fatalf("log line %s: want \"grace\":\"20s\"", line)
	}
}

// go-redis's messages become structured warnings, not plain text lines.
func TestRedisMessagesGoThroughZap(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	redisLogger{log: zap.New(core)}.Printf(context.Background(), "redis: discarding bad PubSub connection: %s", "EOF")
	entries := logs.All()
	if len(entries) != 1 || entries[0].Level != zap.WarnLevel ||
		entries[0].Message != "discarding bad PubSub connection: EOF" || entries[0].ContextMap()["component"] != "go-redis" {
		t.Fatalf("entries = %+v", entries)
	}
}
