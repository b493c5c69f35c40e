package cli

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/llm"
)

func runBenchCmd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	c, ok := Lookup("bench")
	if !ok {
		t.Fatal("bench is not registered")
	}
	var out bytes.Buffer
	code := Main(context.Background(), c, args, &out, &out)
	return code, out.String()
}

// benchServer starts a whole server on the offline demo model, paced so
// that the streams overlap, behind an API key.
func benchServer(t *testing.T, key string) string {
	t.Helper()
	cfg := config.Default()
	cfg.Storage.SQLite.Path = filepath.Join(t.TempDir(), "chatpipe.db")
	m := cfg.Models["default"]
	m.ChunkDelay = 2 * time.Millisecond
	cfg.Models["default"] = m
	cfg.Auth.Keys = []config.AuthKey{{Tenant: "acme", Key: key}}
	a, err := app.New(context.Background(), cfg, app.Options{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		srv.Close()
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	})
	return srv.URL
}

func TestBenchRunsABurstAndReportsLatencyCPUAndMemory(t *testing.T) {
	const key = "bench-0123456789abcdef"
	url := benchServer(t, key)
	for _, probe := range [][]string{nil, {"-pid", strconv.Itoa(os.Getpid())}} {
		args := append([]string{"-server", url, "-key", key, "-streams", "6", "-mode", "chat"}, probe...)
		code, out := runBenchCmd(t, args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`chatpipe bench: 6 streams at once, mode chat`),
			regexp.MustCompile(`finished\s+completed 6; failed 0`),
			regexp.MustCompile(`first token\s+p50 [0-9.]+ ms  p90 [0-9.]+ ms  p99 [0-9.]+ ms  max [0-9.]+ ms  \(6 streams\)`),
			regexp.MustCompile(`frames\s+[1-9][0-9]* in `),
			regexp.MustCompile(`server CPU\s+\S+, [0-9.]+ µs per frame`),
			regexp.MustCompile(`server RSS\s+before [0-9.]+ MiB, peak [0-9.]+ MiB`),
		} {
			if !want.MatchString(out) {
				t.Errorf("probe %v: output lacks %q\n%s", probe, want, out)
			}
		}
	}
}

func TestBenchRefusesBadInputClearly(t *testing.T) {
	const key = "bench-0123456789abcdef"
	url := benchServer(t, key)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-streams", "0"}, 2, "-streams must be at least 1"},
		{[]string{"extra"}, 2, "no arguments follow the flags"},
		{[]string{"-server", url, "-key", "wrong-0123456789abcdef", "-streams", "2"}, 1, "401"},
		{[]string{"-server", url, "-key", key, "-streams", "1", "-mode", "nosuchmode"}, 1, "creating the sessions"},
		{[]string{"-server", "http://127.0.0.1:1", "-streams", "1", "-timeout", "5s"}, 1, "connection refused"},
	} {
		code, out := runBenchCmd(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s", tc.args, code, tc.code, tc.want, out)
		}
	}
}

// The reference server serves the bench's whole contract: the bench runs
// against it (with and without -pid) and prints every figure, and each
// turn leaves the question and the answer saved.
func TestBenchRunsAgainstTheReferenceServer(t *testing.T) {
	db, err := openReferenceDB(filepath.Join(t.TempDir(), "ref.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer(newBenchReference(db, time.Millisecond))
	defer srv.Close()
	for _, probe := range [][]string{nil, {"-pid", strconv.Itoa(os.Getpid())}} {
		code, out := runBenchCmd(t, append([]string{"-server", srv.URL, "-streams", "5"}, probe...)...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`finished\s+completed 5; failed 0`),
			regexp.MustCompile(`first token\s+p50 [0-9.]+ ms  p90 [0-9.]+ ms  p99 [0-9.]+ ms  max [0-9.]+ ms  \(5 streams\)`),
			regexp.MustCompile(`server CPU\s+\S+, [0-9.]+ µs per frame`),
			regexp.MustCompile(`server RSS\s+before [0-9.]+ MiB, peak [0-9.]+ MiB`),
		} {
			if !want.MatchString(out) {
				t.Errorf("probe %v: output lacks %q\n%s", probe, want, out)
			}
		}
	}
	thinking, answer := llm.DemoReply(benchDefaultQuestion)
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM messages WHERE role = 'user' AND content = ?`, benchDefaultQuestion).Scan(&n); err != nil || n != 10 {
		t.Errorf("questions saved: %d, %v; want 10", n, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM messages WHERE role = 'assistant' AND content = ? AND thinking = ?`, answer, thinking).Scan(&n); err != nil || n != 10 {
		t.Errorf("answers saved: %d, %v; want 10", n, err)
	}
}

// The command listens, says where, and shuts down cleanly when its
// context ends (here: at once); arguments after the flags are refused.
func TestBenchReferenceServesUntilCancelled(t *testing.T) {
	c, ok := Lookup("bench-reference")
	if !ok {
		t.Fatal("bench-reference is not registered")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	code := Main(ctx, c, []string{"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "data", "ref.db")}, &out, &out)
	if code != 0 || !regexp.MustCompile(`serving on http://127\.0\.0\.1:[1-9][0-9]* \(chunk delay 30ms\)`).MatchString(out.String()) {
		t.Errorf("exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := Main(ctx, c, []string{"extra"}, &out, &out); code != 2 {
		t.Errorf("an argument after the flags: exit %d, want 2\n%s", code, out.String())
	}
}
