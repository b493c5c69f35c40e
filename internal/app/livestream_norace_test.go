//go:build !race

package app_test

// maxStackPerLiveStream bounds the stack memory a live stream holds at
// rest: 8 KiB for the connection's goroutine, 8 KiB for the generation's
// and up to 4 KiB for net/http's background read, with a margin for the
// stacks the GC has not shrunk yet (8–18 KiB measured; 26–32 KiB when the
// two rested on 16 KiB stacks).
const maxStackPerLiveStream = 24 << 10

// maxStackPerHubStream bounds it for a session's stream, whose reader the
// hub writes: 8 KiB for the generation's goroutine, and the share of 16
// streams in what the hub's workers and the partial saver grow to when
// they first run (8–12 KiB measured).
const maxStackPerHubStream = 14 << 10

// raceDetector: see livestream_race_test.go.
const raceDetector = false
