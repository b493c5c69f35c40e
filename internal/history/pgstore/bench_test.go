package pgstore

import (
	"testing"

	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/history/historytest"
	"github.com/chatpipe/chatpipe/internal/pgdb/pgdbtest"
)

// BenchmarkStartTurnFinishMessage measures one saved turn: two round trips
// to the server (compare with sqlitestore's, which runs the same body).
func BenchmarkStartTurnFinishMessage(b *testing.B) {
	historytest.BenchTurns(b, func(b *testing.B) history.Store { return openSchema(b, pgdbtest.NewSchema(b)) })
}

// BenchmarkBranch measures the history read of a long session's turn.
func BenchmarkBranch(b *testing.B) {
	historytest.BenchBranch(b, func(b *testing.B) history.Store { return openSchema(b, pgdbtest.NewSchema(b)) })
}
