//go:build race

package app_test

// maxStackPerLiveStream is not bounded under the race detector: its
// instrumentation makes frames larger and its resting stacks vary from run
// to run (18–42 KiB a stream measured on one machine), so a bound there
// would only flake. The plain `go test ./...` run bounds it; the goroutine
// count is checked in both.
const maxStackPerLiveStream = 0

const maxStackPerHubStream = 0

// raceDetector: the race detector's instrumentation slows a search about
// tenfold, so TestRetrievalEvaluation measures only its first two sets
// under it (all of them in the plain run).
const raceDetector = true
