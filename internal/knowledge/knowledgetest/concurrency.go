package knowledgetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

var concurrencyTests = []test{
	{"ConcurrentAddsDeletesAndSearchesAllSucceed", func(t *testing.T, s knowledge.Store) {
		const writers, perWriter, searchers = 4, 8, 4
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		errs := make(chan error, writers+searchers)

		var writing sync.WaitGroup
		for w := range writers {
			writing.Go(func() {
				for i := range perWriter {
					id := fmt.Sprintf("w%d-%d", w, i)
					doc, chunks := newDoc(id, "Doc "+id, "shared topic text", marker(w, i)+" unique words 并发写入")
					chunks[0].Embedding = []float32{1, float32(w), float32(i)}
					if _, err := s.AddDocument(ctx, doc, chunks); err != nil {
						errs <- fmt.Errorf("add %s: %w", id, err)
						return
					}
					if i%4 == 3 { // delete every fourth right away
						if err := s.DeleteDocument(ctx, id); err != nil {
							errs <- fmt.Errorf("delete %s: %w", id, err)
							return
						}
					}
				}
			})
		}
		var searching sync.WaitGroup
		stop := make(chan struct{})
		for range searchers {
			searching.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := s.KeywordSearch(ctx, []string{knowledge.DefaultTenant}, "shared topic 并发", 20); err != nil {
						errs <- fmt.Errorf("keyword search: %w", err)
						return
					}
					if _, err := s.VectorSearch(ctx, knowledge.DefaultTenant, []float32{1, 1, 1}, 20); err != nil {
						errs <- fmt.Errorf("vector search: %w", err)
						return
					}
					if _, err := s.Version(ctx); err != nil {
						errs <- fmt.Errorf("version: %w", err)
						return
					}
				}
			})
		}
		writing.Wait()
		close(stop)
		searching.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}

		_, total, err := s.Documents(t.Context(), knowledge.DefaultTenant, 100, 0)
		if want := writers * perWriter * 3 / 4; err != nil || total != want {
			t.Errorf("Documents total = %d, %v; want %d", total, err, want)
		}
		for w := range writers {
			for i := range perWriter {
				id := fmt.Sprintf("w%d-%d", w, i)
				hits := keyword(t, s, marker(w, i), 5)
				_, err := s.Document(t.Context(), id)
				deleted := i%4 == 3
				switch {
				case deleted && (len(hits) != 0 || !errors.Is(err, knowledge.ErrNotFound)):
					t.Errorf("deleted %s: hits %v, Document err %v", id, chunkIDs(hits), err)
				case !deleted && (len(hits) != 1 || hits[0].DocumentID != id || err != nil):
					t.Errorf("kept %s: hits %v, Document err %v", id, chunkIDs(hits), err)
				}
			}
		}
		if got := len(vector(t, s, []float32{1, 1, 1}, 100)); got != writers*perWriter*3/4 {
			t.Errorf("vector hits = %d, want one per kept document (%d)", got, writers*perWriter*3/4)
		}
	}},

	{"ConcurrentDuplicateAddsStoreOneDocument", func(t *testing.T, s knowledge.Store) {
		const n = 8
		var wg sync.WaitGroup
		results := make([]error, n)
		for i := range n {
			wg.Go(func() {
				doc, chunks := newDoc(fmt.Sprintf("dup%d", i), "Same", "identical content")
				_, results[i] = s.AddDocument(t.Context(), doc, chunks)
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range results {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, knowledge.ErrDuplicate):
				t.Errorf("AddDocument: %v, want nil or ErrDuplicate", err)
			}
		}
		if _, total, _ := s.Documents(t.Context(), knowledge.DefaultTenant, 10, 0); ok != 1 || total != 1 {
			t.Errorf("%d adds succeeded, %d documents stored; want 1 and 1", ok, total)
		}
	}},
}

// marker is a word only document i of writer w has.
func marker(w, i int) string { return fmt.Sprintf("marker%dx%d", w, i) }
