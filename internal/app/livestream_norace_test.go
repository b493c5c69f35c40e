//go:build !race

package app_test

// maxStackPerLiveStream bounds the stack memory a live stream holds at
// rest: 8 KiB for the connection's goroutine, 8 KiB for the generation's
// and up to 4 KiB for net/http's background read, with a margin for the
// stacks the GC has not shrunk yet (8–18 KiB measured; 26–32 KiB when the
// two rested on 16 KiB stacks).
const maxStackPerLiveStream = 24 << 10
