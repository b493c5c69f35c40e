package knowledge_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/retrieval"
)

// The benchmarks run on knowledgetest.ScaleCorpus: 500 documents of 20
// sections, one section in five in Chinese, ingested through the chunker
// (about 12,000 chunks: some sections take two).

const benchDims = 512

// benchCorpus is the corpus as Markdown files, and its queries.
type benchCorpus struct {
	docs    []string
	queries []string
}

func newBenchCorpus() benchCorpus {
	sc := knowledgetest.NewScaleCorpus(500, 20)
	c := benchCorpus{queries: sc.Queries}
	for _, d := range sc.Docs {
		c.docs = append(c.docs, d.Markdown())
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
// keyword-only and hybrid, reporting per-query latency percentiles and
// the process's CPU time per query (cpu-ms/op). The
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
			var cpuStart time.Duration
			b.ReportAllocs()
			for b.Loop() {
				if i == 0 {
					cpuStart = processCPU()
				}
				start := time.Now()
				resp, err := svc.Search(context.Background(), retrieval.SearchRequest{Query: corpus.queries[i%len(corpus.queries)]})
				durations = append(durations, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				hits += len(resp.Hits)
				i++
			}
			// CPU per search, corpus building and ingest left out: on a
			// loaded machine wall times mean little.
			if cpu := processCPU() - cpuStart; i > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(i), "cpu-ms/op")
			}
			reportPercentiles(b, durations)
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
