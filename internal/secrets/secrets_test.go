package secrets

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRedactReplacesEveryShapeOfAKnownSecret(t *testing.T) {
	const key = `gsk_Ab/cd+ef=gh"ij<kl>`
	r := New(key, "short", "sk-proj-LONGER-gsk_Ab/cd+ef=gh\"ij<kl>-tail")
	for _, tc := range []struct{ in, want string }{
		{"Invalid API Key: " + key, "Invalid API Key: [redacted]"},
		{"key=gsk_Ab%2Fcd%2Bef%3Dgh%22ij%3Ckl%3E&x=1", "key=[redacted]&x=1"},    // query-encoded
		{`{"key":"gsk_Ab/cd+ef=gh\"ij\u003ckl\u003e"}`, `{"key":"[redacted]"}`}, // JSON-escaped
		{"gsk_Ab/cd+ef=gh&#34;ij&lt;kl&gt;", "[redacted]"},                      // HTML-escaped
		{"sk-proj-LONGER-" + key + "-tail!", "[redacted]!"},                     // the longer secret wins
		{"a short word stays", "a short word stays"},                            // below MinLen
		{"nothing here", "nothing here"},
	} {
		if got := r.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var none *Redactor
	if none.Redact(key) != key || !none.Empty() || !New().Empty() {
		t.Error("a nil or empty redactor must pass text through")
	}
}

func TestLogCoreRedactsMessagesFieldsAndErrors(t *testing.T) {
	const key = "c0ffee11d00dfeedbeef"
	core, logs := observer.New(zapcore.DebugLevel)
	r := New(key)
	log := zap.New(Core(core, func() *Redactor { return r })).With(zap.String("with", "w "+key))
	log.Warn("call failed: "+key,
		zap.String("s", key),
		zap.Error(errors.New("provider said "+key)),
		zap.Stringer("st", stringer("x"+key)),
		zap.Int("n", 3))
	for _, e := range logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		if strings.Contains(line, key) {
			t.Fatalf("the key is in the log: %s", line)
		}
		if !strings.Contains(line, "provider said [redacted]") || !strings.Contains(line, "n=3") {
			t.Fatalf("log line lost its content: %s", line)
		}
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

// The cost every log line and error event pays: a 200-byte text without a
// secret, with five configured secrets.
func BenchmarkRedactCleanText(b *testing.B) {
	r := New("sk-proj-0123456789abcdef", "gsk_abcdefghijklmnop", "redis-password-1", "pg-password-22", "tenant-key-333")
	text := strings.Repeat("The model provider returned HTTP 500 for model default. ", 4)
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Redact(text)
	}
}

func BenchmarkRedactTextWithSecret(b *testing.B) {
	r := New("sk-proj-0123456789abcdef", "gsk_abcdefghijklmnop", "redis-password-1", "pg-password-22", "tenant-key-333")
	text := strings.Repeat("The model provider returned HTTP 401 for model default. ", 3) + "Invalid API Key: gsk_abcdefghijklmnop"
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Redact(text)
	}
}
