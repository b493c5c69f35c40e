package knowledge_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/pipeline"
)

// The benchmarks run on a synthetic bilingual corpus: documents of 20
// sections, each section one paragraph that fits a chunk (so 500
// documents are 10,000 chunks), words drawn with a Zipf distribution from
// a 5,000-word vocabulary, one section in five in Chinese.

const (
	benchSections  = 20
	benchDocuments = 500 // × benchSections = 10,000 chunks
	benchDims      = 512
)

type benchCorpus struct {
	docs    []string
	queries []string
}

func newBenchCorpus() benchCorpus {
	rng := rand.New(rand.NewPCG(7, 11))
	syllables := strings.Fields("ka lo mi ren tu sa vel dor pi an eth or ul zim bra que nox tal fen gor")
	vocab := make([]string, 5000)
	for i := range vocab {
		var b strings.Builder
		for n, k := 2+i%3, i; n > 0; n-- {
			b.WriteString(syllables[k%len(syllables)])
			k = k/len(syllables) + n*7
		}
		vocab[i] = fmt.Sprintf("%s%d", b.String(), i%97)
	}
	han := make([]rune, 1500)
	for i := range han {
		han[i] = rune(0x4E00 + rng.IntN(0x5000))
	}
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	hanZipf := rand.NewZipf(rng, 1.05, 2, uint64(len(han)-1))
	english := func(words int) string {
		var b strings.Builder
		for i := range words {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[zipf.Uint64()])
			if i%12 == 11 {
				b.WriteByte('.')
			}
		}
		return b.String() + "."
	}
	chinese := func(chars int) string {
		var b strings.Builder
		for i := range chars {
			b.WriteRune(han[hanZipf.Uint64()])
			if i%20 == 19 {
				b.WriteString("。")
			}
		}
		return b.String() + "。"
	}
	var c benchCorpus
	for d := range benchDocuments {
		var b strings.Builder
		fmt.Fprintf(&b, "# Document %d\n\n", d)
		for s := range benchSections {
			fmt.Fprintf(&b, "## Section %d.%d\n\n", d, s)
			if s%5 == 4 {
				b.WriteString(chinese(150 + rng.IntN(100)))
			} else {
				b.WriteString(english(60 + rng.IntN(40)))
			}
			b.WriteString("\n\n")
		}
		c.docs = append(c.docs, b.String())
	}
	for q := range 500 {
		if q%5 == 4 {
			c.queries = append(c.queries, chinese(4+rng.IntN(6)))
			continue
		}
		words := []string{"how", "do", "i"}
		for range 2 + rng.IntN(4) {
			words = append(words, vocab[rng.IntN(2000)]) // mid-frequency words
		}
		c.queries = append(c.queries, strings.Join(words, " ")+"?")
	}
	return c
}

// BenchmarkIngest measures ingestion (normalise, chunk, embed in process,
// store with the keyword index) in chunks per second.
func BenchmarkIngest(b *testing.B) {
	corpus := newBenchCorpus()
	for _, mode := range []struct {
		name     string
		embedder *knowledgetest.HashEmbedder
	}{{"keyword", nil}, {"hybrid", &knowledgetest.HashEmbedder{Dims: benchDims}}} {
		b.Run(mode.name, func(b *testing.B) {
			svc := benchService(b, mode.embedder)
			chunks, i := 0, 0
			b.ReportAllocs()
			for b.Loop() {
				doc, err := svc.Ingest(context.Background(), knowledge.IngestRequest{
					Content: corpus.docs[i%len(corpus.docs)] + fmt.Sprintf("\n\nRevision %d.", i),
				})
				if err != nil {
					b.Fatal(err)
				}
				chunks += doc.Chunks
				i++
			}
			b.ReportMetric(float64(chunks)/b.Elapsed().Seconds(), "chunks/s")
			b.ReportMetric(float64(chunks)/float64(i), "chunks/doc")
		})
	}
}

// BenchmarkSearch10kChunks measures Service.Search over 10,000 chunks,
// keyword-only and hybrid, reporting per-query latency percentiles. The
// "beside-another-tenant" runs repeat them after a second tenant has
// stored the same 10,000 chunks: every match is found twice and half of
// them must be passed over, the worst case of the tenant filter.
func BenchmarkSearch10kChunks(b *testing.B) {
	corpus := newBenchCorpus()
	emb := knowledgetest.HashEmbedder{Dims: benchDims}
	store := openStore(b)
	defer store.Close()
	builder := knowledge.NewService(store, emb, testConfig(), nil)
	ingestAll := func(tenantID string) int {
		total := 0
		for _, d := range corpus.docs {
			doc, err := builder.Ingest(context.Background(), knowledge.IngestRequest{TenantID: tenantID, Content: d})
			if err != nil {
				b.Fatal(err)
			}
			total += doc.Chunks
		}
		return total
	}
	total := ingestAll(knowledge.DefaultTenant)
	if total < 10000 {
		b.Fatalf("corpus has %d chunks, want 10,000", total)
	}

	modes := []struct {
		name string
		svc  *knowledge.Service
	}{
		{"keyword", knowledge.NewService(store, nil, testConfig(), nil)},
		{"hybrid", builder},
	}
	run := func(name string, svc *knowledge.Service) {
		b.Run(name, func(b *testing.B) {
			var durations []time.Duration
			hits, i := 0, 0
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				resp, err := svc.Search(context.Background(), pipeline.SearchRequest{Query: corpus.queries[i%len(corpus.queries)]})
				durations = append(durations, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				hits += len(resp.Hits)
				i++
			}
			slices.Sort(durations)
			pct := func(p float64) float64 {
				return float64(durations[int(p*float64(len(durations)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(hits)/float64(i), "hits/op")
			b.ReportMetric(float64(total), "chunks")
		})
	}
	for _, m := range modes {
		run(m.name, m.svc)
	}
	ingestAll("another-tenant")
	for _, m := range modes {
		run(m.name+"-beside-another-tenant", m.svc)
	}
}

func benchService(b *testing.B, emb *knowledgetest.HashEmbedder) *knowledge.Service {
	if emb == nil {
		return newService(b, nil, testConfig())
	}
	return newService(b, *emb, testConfig())
}
