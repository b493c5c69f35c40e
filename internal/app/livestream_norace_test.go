//go:build !race

package app_test

// maxStackPerLiveStream bounds the stack memory a live stream holds at
// rest: 8 KiB for the connection's goroutine, 8 KiB for the generation's
// and up to 4 KiB for net/http's background read.
const maxStackPerLiveStream = 20 << 10
