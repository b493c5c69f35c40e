//go:build race

package app_test

// maxStackPerLiveStream is looser under the race detector, whose
// instrumentation makes frames larger.
const maxStackPerLiveStream = 40 << 10
