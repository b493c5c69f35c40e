package stream

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkMemoryBurst replays the burst of the issue: 2,500 streams of
// 200 KB chunks (2 a stream, finished), and reports the live heap and the
// process's peak RSS once they are all in the store. Run one budget per
// process so the peak RSS is its own:
//
//	go test -run x -bench 'MemoryBurst/unbounded' -benchtime 1x ./internal/stream/
//	go test -run x -bench 'MemoryBurst/512MiB' -benchtime 1x ./internal/stream/
func BenchmarkMemoryBurst(b *testing.B) {
	for _, c := range []struct {
		name  string
		total int64
	}{
		{"unbounded", 1 << 50}, // what the store did before its global bound
		{"512MiB", 512 << 20},  // the default on a 4 GiB machine
		{"auto", 0},            // the default on this machine
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			chunk := []byte(strings.Repeat(`{"seq":1,"type":"answer.delta","content":"lorem ipsum"}`, 200<<10/56+1))
			for range b.N {
				m := NewMemory(MemoryOptions{MaxTotalBytes: c.total})
				ctx := context.Background()
				for i := range 2500 {
					id := fmt.Sprint("s", i)
					_ = m.Create(ctx, id)
					for seq := int64(1); seq <= 2; seq++ {
						data := make([]byte, 200<<10)
						copy(data, chunk) // touched, as encoded events are: counted in RSS
						_ = m.Append(ctx, id, Record{Seq: seq, Type: "answer.delta", Data: data})
					}
					_ = m.Finish(ctx, id)
				}
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(m.Bytes())/(1<<20), "store-MiB")
				b.ReportMetric(peakRSSMiB(), "peak-RSS-MiB")
				_ = m.Close()
			}
		})
	}
}

// peakRSSMiB is VmHWM of /proc/self/status (Linux), 0 elsewhere.
func peakRSSMiB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}
