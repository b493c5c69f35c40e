package stream

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Bounds of the memory budget sized to the machine.
const (
	minAutoTotalBytes = 64 << 20
	maxAutoTotalBytes = 4 << 30
	// unknownMachineBytes is assumed when the machine's memory cannot be
	// read (not Linux): a small server.
	unknownMachineBytes = 1 << 30
)

// AutoMaxTotalBytes is the in-memory store's budget when none is
// configured: an eighth of the memory this process may use — the least
// of the machine's RAM, the cgroup limit (a container) and GOMEMLIMIT —
// between 64 MiB and 4 GiB. An eighth, because the store only holds
// copies for replay (every answer is also saved in the history store),
// while the rest of the server (connections' buffers, SQLite's cache, the
// in-memory vectors, Go's garbage collector headroom, which doubles the
// live heap by default) needs the remainder.
func AutoMaxTotalBytes() int64 {
	avail := int64(math.MaxInt64)
	for _, n := range []int64{memTotal(), cgroupLimit(), debug.SetMemoryLimit(-1)} {
		if n > 0 {
			avail = min(avail, n)
		}
	}
	if avail == math.MaxInt64 {
		avail = unknownMachineBytes
	}
	return min(max(avail/8, minAutoTotalBytes), maxAutoTotalBytes)
}

// memTotal reads MemTotal from /proc/meminfo; 0 when unknown.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// cgroupLimit reads the memory limit of the process's cgroup (v2, then
// v1); 0 when there is none or it cannot be read.
func cgroupLimit() int64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 { // "max", or v1's "no limit" (a huge number)
			return 0
		}
		return n
	}
	return 0
}
