package pgstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/knowledge/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/pgdb/pgdbtest"
)

// The search benchmarks run the same 10,000 chunks (knowledgetest.ScaleCorpus:
// 500 documents of 20, one chunk in five in Chinese, 256-dimensional hash
// embeddings) through this store and the SQLite store, calling the stores
// directly (no Service, no fusion).

const benchDims = 256

// BenchmarkStoreSearch10kChunks: KeywordSearch and VectorSearch (limit
// 20) on either store. "vector-after-another-replica-wrote" adds a
// document through a second store before every search: the cost of
// reloading the in-memory copy.
func BenchmarkStoreSearch10kChunks(b *testing.B) {
	otherDocs := 0 // IDs stay unique when -count runs a store's benchmarks again
	corpus := knowledgetest.NewScaleCorpus(500, 20)
	emb := knowledgetest.HashEmbedder{Dims: benchDims}
	ctx := context.Background()
	stores := []struct {
		name string
		open func(b *testing.B) (knowledge.Store, func(b *testing.B) knowledge.Store)
	}{
		{"sqlite", func(b *testing.B) (knowledge.Store, func(b *testing.B) knowledge.Store) {
			path := filepath.Join(b.TempDir(), "chatpipe.db")
			openAt := func(b *testing.B) knowledge.Store {
				s, err := sqlitestore.Open(ctx, path)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				return s
			}
			return openAt(b), openAt
		}},
		{"postgres", func(b *testing.B) (knowledge.Store, func(b *testing.B) knowledge.Store) {
			schema := pgdbtest.NewSchema(b)
			return openSchema(b, schema), func(b *testing.B) knowledge.Store { return openSchema(b, schema) }
		}},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s, openAnother := st.open(b)
			if err := corpus.Load(ctx, s, knowledge.DefaultTenant, &emb); err != nil {
				b.Fatal(err)
			}
			b.Run("keyword", func(b *testing.B) {
				b.ReportAllocs()
				hits, i := 0, 0
				for b.Loop() {
					h, err := s.KeywordSearch(ctx, []string{knowledge.DefaultTenant}, corpus.Queries[i%len(corpus.Queries)], 20)
					if err != nil {
						b.Fatal(err)
					}
					hits += len(h)
					i++
				}
				b.ReportMetric(float64(hits)/float64(i), "hits/op")
			})
			b.Run("vector", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					q := knowledgetest.Vector32(emb, corpus.Queries[i%len(corpus.Queries)])
					if _, err := s.VectorSearch(ctx, knowledge.DefaultTenant, q, 20); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			b.Run("vector-after-another-replica-wrote", func(b *testing.B) {
				other := openAnother(b)
				q := knowledgetest.Vector32(emb, corpus.Queries[0])
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					otherDocs++
					id := fmt.Sprintf("other-%d", otherDocs)
					if _, err := other.AddDocument(ctx, knowledge.Document{ID: id, Content: id},
						[]knowledge.Chunk{{ID: id, Content: id, Embedding: q}}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if _, err := s.VectorSearch(ctx, knowledge.DefaultTenant, q, 20); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
