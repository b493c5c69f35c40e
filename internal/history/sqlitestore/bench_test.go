package sqlitestore

import (
	"path/filepath"
	"testing"

	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/history/historytest"
)

// BenchmarkStartTurnFinishMessage measures one saved turn on a WAL file
// (the single writer connection is what the parallel run measures).
func BenchmarkStartTurnFinishMessage(b *testing.B) {
	historytest.BenchTurns(b, func(b *testing.B) history.Store {
		s, err := Open(b.Context(), filepath.Join(b.TempDir(), "history.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}

// BenchmarkBranch measures the history read of a long session's turn.
func BenchmarkBranch(b *testing.B) {
	historytest.BenchBranch(b, func(b *testing.B) history.Store {
		s, err := Open(b.Context(), filepath.Join(b.TempDir(), "history.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}
