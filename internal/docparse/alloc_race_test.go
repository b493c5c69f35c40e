//go:build race

package docparse_test

// allocScale multiplies the allocation bounds of the PDF bomb tests: under
// the race detector the same parse allocates about twice as much (130
// against 66 MiB for the LZW bomb), so the plain run's bounds would fail
// there while still far below what an unbounded decode allocates.
const allocScale = 2
