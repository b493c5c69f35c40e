package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/knowledge/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/pgdb/pgdbtest"
)

// The search benchmarks run the same 10,000 chunks (500 documents of 20,
// words drawn with a Zipf distribution, one chunk in five in Chinese,
// 256-dimensional hash embeddings) through this store and the SQLite
// store, calling the stores directly (no Service, no fusion).

const (
	benchDocuments = 500
	benchSections  = 20
	benchDims      = 256
)

type benchCorpus struct {
	docs    [][]string // each document's chunks
	queries []string
}

func newBenchCorpus() benchCorpus {
	rng := rand.New(rand.NewPCG(7, 11))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%xq%d", i*7919%65536, i%97)
	}
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	han := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteRune(rune(0x4E00 + rng.IntN(1500)))
		}
		return b.String()
	}
	var c benchCorpus
	for range benchDocuments {
		chunks := make([]string, benchSections)
		for s := range chunks {
			if s%5 == 4 {
				chunks[s] = han(150 + rng.IntN(100))
				continue
			}
			words := make([]string, 60+rng.IntN(40))
			for i := range words {
				words[i] = vocab[zipf.Uint64()]
			}
			chunks[s] = strings.Join(words, " ")
		}
		c.docs = append(c.docs, chunks)
	}
	for q := range 500 {
		if q%5 == 4 {
			c.queries = append(c.queries, han(4+rng.IntN(6)))
			continue
		}
		words := []string{"how", "do", "i"}
		for range 2 + rng.IntN(4) {
			words = append(words, vocab[rng.IntN(2000)])
		}
		c.queries = append(c.queries, strings.Join(words, " ")+"?")
	}
	return c
}

func (c benchCorpus) load(b testing.TB, s knowledge.Store, emb knowledgetest.HashEmbedder) {
	for d, texts := range c.docs {
		id := fmt.Sprintf("d%d", d)
		chunks := make([]knowledge.Chunk, len(texts))
		for i, text := range texts {
			chunks[i] = knowledge.Chunk{ID: fmt.Sprintf("%s-%d", id, i), Index: i, Content: text, Embedding: vector32(emb, text)}
		}
		doc := knowledge.Document{ID: id, Title: fmt.Sprintf("Document %d", d), Content: strings.Join(texts, "\n\n")}
		if _, err := s.AddDocument(context.Background(), doc, chunks); err != nil {
			b.Fatal(err)
		}
	}
}

func vector32(emb knowledgetest.HashEmbedder, text string) []float32 {
	v := emb.Vector(text)
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = float32(f)
	}
	return out
}

// BenchmarkStoreSearch10kChunks: KeywordSearch and VectorSearch (limit
// 20) on either store. "vector-after-another-replica-wrote" adds a
// document through a second store before every search: the cost of
// reloading the in-memory copy.
func BenchmarkStoreSearch10kChunks(b *testing.B) {
	otherDocs := 0 // IDs stay unique when -count runs a store's benchmarks again
	corpus := newBenchCorpus()
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
			corpus.load(b, s, emb)
			b.Run("keyword", func(b *testing.B) {
				b.ReportAllocs()
				hits, i := 0, 0
				for b.Loop() {
					h, err := s.KeywordSearch(ctx, knowledge.DefaultTenant, corpus.queries[i%len(corpus.queries)], 20)
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
					q := vector32(emb, corpus.queries[i%len(corpus.queries)])
					if _, err := s.VectorSearch(ctx, knowledge.DefaultTenant, q, 20); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			b.Run("vector-after-another-replica-wrote", func(b *testing.B) {
				other := openAnother(b)
				q := vector32(emb, corpus.queries[0])
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
