package secrets

import (
	"fmt"

	"go.uber.org/zap/zapcore"
)

// Core wraps a zap core so that no log line carries a configured secret:
// the message, string fields, errors and stringers are redacted with the
// Redactor current returns at the time of writing (it changes when the
// configuration is reloaded). Other field types (numbers, durations) cannot
// hold a secret and pass unchanged.
func Core(next zapcore.Core, current func() *Redactor) zapcore.Core {
	return &core{Core: next, current: current}
}

type core struct {
	zapcore.Core
	current func() *Redactor
}

func (c *core) With(fields []zapcore.Field) zapcore.Core {
	return &core{Core: c.Core.With(redactFields(c.current(), fields)), current: c.current}
}

func (c *core) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *core) Write(e zapcore.Entry, fields []zapcore.Field) error {
	r := c.current()
	e.Message = r.Redact(e.Message)
	return c.Core.Write(e, redactFields(r, fields))
}

// redactFields returns fields with secrets removed, copying the slice only
// when a field may hold text.
func redactFields(r *Redactor, fields []zapcore.Field) []zapcore.Field {
	if r.Empty() {
		return fields
	}
	out := fields
	copied := false
	for i, f := range fields {
		var text string
		switch f.Type {
		case zapcore.StringType:
			text = f.String
		case zapcore.ErrorType:
			if err, ok := f.Interface.(error); ok && err != nil {
				text = err.Error()
			}
		case zapcore.StringerType:
			if s, ok := f.Interface.(fmt.Stringer); ok && s != nil {
				text = s.String()
			}
		case zapcore.ReflectType, zapcore.ByteStringType:
			if f.Type == zapcore.ByteStringType {
				text = string(f.Interface.([]byte))
			} else {
				text = fmt.Sprint(f.Interface)
			}
		default:
			continue
		}
		red := r.Redact(text)
		if red == text {
			continue // unchanged: keep the field as it was (an object stays an object)
		}
		if !copied {
			out = append([]zapcore.Field(nil), fields...)
			copied = true
		}
		out[i] = zapcore.Field{Key: f.Key, Type: zapcore.StringType, String: red}
	}
	return out
}
