//go:build !race

package docparse_test

// allocScale: see alloc_race_test.go.
const allocScale = 1
