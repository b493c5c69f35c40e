package app_test

import (
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkAnswerPartialSaves streams whole answers of 300 deltas (about
// the answer of the crash) through the server, without and with
// periodic partial saves, and reports the time per delta and what SQLite
// wrote per answer (bytes written by the process, /proc/self/io wchar,
// which on this path is the -wal file; the final save and the turn are
// in both figures). History in the middle of a session: every save
// rewrites the answer so far.
//
//	go test -run x -bench AnswerPartialSaves -benchtime 200x ./internal/app/
func BenchmarkAnswerPartialSaves(b *testing.B) {
	const deltas = 300
	for _, c := range []struct {
		name     string
		every    int
		interval time.Duration
	}{
		{"off", 0, 0},
		{"every32", 32, time.Second}, // the defaults
		{"every8", 8, time.Second},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := benchConfig(b, "http://provider.invalid/v1")
			cfg.Stream.PartialSaveDeltas = c.every
			cfg.Stream.PartialSaveInterval = c.interval
			client := &http.Client{Transport: memoryProvider{n: deltas}}
			srv, session := benchApp(b, cfg, client)
			b.ReportAllocs()
			b.ResetTimer()
			w0 := writtenBytes()
			for range b.N {
				resp, err := http.Post(srv.URL+"/api/v1/sessions/"+session+"/messages", "application/json",
					strings.NewReader(`{"content":"benchmark question"}`))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*deltas), "ns/delta")
			b.ReportMetric(float64(writtenBytes()-w0)/float64(b.N), "written-bytes/answer")
		})
	}
}

// writtenBytes is the process's wchar from /proc/self/io (Linux).
func writtenBytes() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "wchar:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			return n
		}
	}
	return 0
}
