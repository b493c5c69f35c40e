package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// encoderConfig is the log line format: ISO 8601 times, and durations
// with their unit ("grace":"20s") — zap's default writes bare seconds,
// which a reader cannot tell from milliseconds.
func encoderConfig(console bool) zapcore.EncoderConfig {
	ec := zap.NewProductionEncoderConfig()
	ec.TimeKey = "time"
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	ec.EncodeDuration = zapcore.StringDurationEncoder
	if console {
		ec.EncodeLevel = zapcore.CapitalLevelEncoder
	}
	return ec
}

// redisLogger routes go-redis's own messages (reconnects, pool and
// pub/sub trouble), which it would print as plain text lines into the
// JSON log, through zap at warn.
type redisLogger struct{ log *zap.Logger }

// Printf implements go-redis's logging interface.
func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn(strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "), zap.String("component", "go-redis"))
}

// routeRedisLogs sends go-redis's messages to log. go-redis has one
// process-wide logger: the last app started with Redis owns it.
func routeRedisLogs(log *zap.Logger) { redis.SetLogger(redisLogger{log: log}) }
