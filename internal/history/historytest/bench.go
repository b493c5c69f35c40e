package historytest

import (
	"cmp"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
)

// benchFinal is a typical answer: a few paragraphs, three references and
// usage.
var benchFinal = history.Final{
	Status:   history.StatusCompleted,
	Content:  strings.Repeat("An answer of a few paragraphs. ", 64),
	Thinking: strings.Repeat("Reasoning. ", 48),
	References: []eventbus.Reference{
		{Index: 1, ChunkID: "c1", DocumentID: "d1", Title: "One", Content: "passage one", Score: 0.9},
		{Index: 2, ChunkID: "c2", DocumentID: "d1", Title: "Two", Content: "passage two", Score: 0.8},
		{Index: 3, ChunkID: "c3", DocumentID: "d2", Title: "Three", Content: "passage three", Score: 0.7},
	},
	Usage: &eventbus.Usage{PromptTokens: 900, CompletionTokens: 400, TTFTMS: 300, TotalMS: 4000},
}

// BenchTurns measures one saved turn (StartTurn then FinishMessage) on the
// store open returns, once in one session and once in parallel over 16
// sessions, so every store is measured the same way.
func BenchTurns(b *testing.B, open func(b *testing.B) history.Store) {
	b.Run("serial", func(b *testing.B) {
		s := benchStore(b, open, 1)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			turn(b, s, "s0", i)
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		const sessions = 16
		s := benchStore(b, open, sessions)
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := int(n.Add(1))
				turn(b, s, fmt.Sprintf("s%d", i%sessions), i)
			}
		})
	})
}

func benchStore(b *testing.B, open func(b *testing.B) history.Store, sessions int) history.Store {
	s := open(b)
	for i := range sessions {
		if _, err := s.CreateSession(b.Context(), history.Session{ID: fmt.Sprintf("s%d", i), Mode: "chat"}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func turn(b *testing.B, s history.Store, sessionID string, i int) {
	uid, aid := fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i)
	if _, _, err := s.StartTurn(b.Context(), sessionID, history.Message{ID: uid, Content: "What is WAL mode?"}, aid); err != nil {
		b.Error(err)
		return
	}
	if err := s.FinishMessage(b.Context(), aid, benchFinal); err != nil {
		b.Error(err)
	}
}

// BenchBranch measures reading the branch load_history sends (Branch
// ending at the newest answer) in a session of 100 turns where every
// tenth question was also edited once, so the branch (200 messages) is a
// part of the session (220 messages).
func BenchBranch(b *testing.B, open func(b *testing.B) history.Store) {
	s := benchStore(b, open, 1)
	leaf := ""
	for i := range 100 {
		turn(b, s, "s0", i)
		leaf = fmt.Sprintf("a%d", i)
		if i%10 == 0 && i > 0 {
			prev := fmt.Sprintf("a%d", i-1)
			eu, ea := fmt.Sprintf("eu%d", i), fmt.Sprintf("ea%d", i)
			if _, _, err := s.StartTurn(b.Context(), "s0", history.Message{ID: eu, ParentID: prev, Content: "edited"}, ea); err != nil {
				b.Fatal(err)
			}
			if err := s.FinishMessage(b.Context(), ea, benchFinal); err != nil {
				b.Fatal(err)
			}
			if err := s.SetCurrentLeaf(b.Context(), "s0", leaf); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, limit := range []int{0, 11} { // all; what load_history reads by default (5 rounds and the question)
		b.Run(fmt.Sprint("limit=", limit), func(b *testing.B) {
			want := cmp.Or(limit, 200)
			b.ReportAllocs()
			for b.Loop() {
				msgs, err := s.Branch(b.Context(), "s0", leaf, limit)
				if err != nil || len(msgs) != want {
					b.Fatalf("Branch: %d messages, %v; want %d", len(msgs), err, want)
				}
			}
		})
	}
}
