package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/config"
)

// server.pprof serves Go's profiles at /debug/pprof/ (the index and each
// named profile, with no API key); off, the default, they do not exist.
func TestPprofIsServedOnlyWhenConfigured(t *testing.T) {
	t.Parallel()
	get := func(h *harness, path string) (int, string) {
		t.Helper()
		resp, err := h.client.Get(h.url(path))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	on := newHarness(t, func(c *config.Config) {
		c.Server.Pprof = true
		c.Auth.Keys = []config.AuthKey{{Tenant: "acme", Key: "pprof-0123456789abcdef"}}
	})
	for path, want := range map[string]string{
		"/debug/pprof/":                  "goroutine",
		"/debug/pprof/goroutine?debug=1": "goroutine profile: total",
		"/debug/pprof/heap?debug=1":      "heap profile:",
		"/debug/pprof/cmdline":           "",
	} {
		if code, body := get(on, path); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("pprof on: GET %s = %d, want 200 with %q\n%.300s", path, code, want, body)
		}
	}
	off := newHarness(t)
	if code, _ := get(off, "/debug/pprof/goroutine?debug=1"); code != http.StatusNotFound {
		t.Errorf("pprof off: GET /debug/pprof/goroutine = %d, want 404", code)
	}
}
