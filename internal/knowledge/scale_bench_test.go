package knowledge_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/knowledge/pgstore"
	"github.com/chatpipe/chatpipe/internal/knowledge/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/pgdb/pgdbtest"
	"github.com/chatpipe/chatpipe/internal/retrieval"
)

// BenchmarkSearch100kChunks measures Service.Search (top 20), keyword-only
// and hybrid (256-dimensional hash embeddings), over 100,000 chunks of
// knowledgetest.ScaleCorpus (5,000 documents of 20 sections), per-query
// latency percentiles included, on SQLite, on PostgreSQL with pgvector's
// HNSW index and on PostgreSQL's real[] path (the last two on one schema,
// loaded once; "postgres/pgvector/keyword" is the same query as
// "postgres/real[]/keyword"). The corpus is built and loaded once per run, which takes
// minutes; the PostgreSQL runs need CHATPIPE_TEST_POSTGRES_DSN:
//
//	go test -run '^$' -bench Search100kChunks -benchtime 400x ./internal/knowledge/
func BenchmarkSearch100kChunks(b *testing.B) {
	corpus := knowledgetest.NewScaleCorpus(5000, 20)
	emb := knowledgetest.HashEmbedder{Dims: 256}
	ctx := context.Background()

	b.Run("sqlite", func(b *testing.B) {
		s, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "chatpipe.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		loadScale(b, corpus, s, &emb)
		benchSearchModes(b, corpus, s, emb)
	})

	// PostgreSQL, one schema: loaded through a real[] store (no HNSW index
	// to update per insert), searched by it, then by a pgvector store
	// opening the same schema, which builds the index in one go (with
	// room for it in maintenance_work_mem).
	b.Run("postgres", func(b *testing.B) {
		dsn := pgdbtest.DSN(b)
		schema := pgdbtest.NewSchema(b)
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		open := func(b *testing.B, noPgvector bool) *pgstore.Store {
			s, err := pgstore.Open(ctx, dsn+sep+"maintenance_work_mem=1GB", pgstore.Options{MaxConns: 8, Schema: schema, NoPgvector: noPgvector})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}
		plain := open(b, true)
		loadScale(b, corpus, plain, &emb)
		// Statistics as autovacuum would gather them within a minute of
		// the load: without them the planner mistakes how many chunks
		// the tenant filter keeps.
		pgdbtest.Exec(b, "ANALYZE "+pgx.Identifier{schema, "knowledge_chunks"}.Sanitize()+", "+pgx.Identifier{schema, "knowledge_documents"}.Sanitize())
		b.Run("real[]", func(b *testing.B) { benchSearchModes(b, corpus, plain, emb) })
		start := time.Now()
		s := open(b, false)
		b.Logf("Open built the HNSW index of %d chunks in %v; vector search via %s", corpus.Chunks(), time.Since(start).Round(time.Millisecond), s.VectorSearchBackend())
		b.Run("pgvector", func(b *testing.B) { benchSearchModes(b, corpus, s, emb) })
	})
}

func loadScale(b *testing.B, corpus knowledgetest.ScaleCorpus, s knowledge.Store, emb *knowledgetest.HashEmbedder) {
	start := time.Now()
	if err := corpus.Load(context.Background(), s, knowledge.DefaultTenant, emb); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d chunks in %v", corpus.Chunks(), time.Since(start).Round(time.Millisecond))
}

// benchSearchModes runs keyword and hybrid Service.Search over s, and
// keyword search of Chinese questions naming something in Latin letters
// (one of the corpus's English words before each Chinese query), without
// and with the name score (SearchOptions.NameWeight).
func benchSearchModes(b *testing.B, corpus knowledgetest.ScaleCorpus, s knowledge.Store, emb knowledgetest.HashEmbedder) {
	names := testConfig()
	names.Search.NameWeight = 2
	var named []string
	for i, q := range corpus.Queries {
		if strings.ContainsFunc(q, knowledge.UnspacedScript) && i > 0 {
			named = append(named, strings.Fields(corpus.Queries[i-1])[3]+" "+q)
		}
	}
	for _, m := range []struct {
		name    string
		svc     *knowledge.Service
		queries []string
	}{
		{"keyword", knowledge.NewService(s, nil, testConfig(), nil), corpus.Queries},
		{"hybrid", knowledge.NewService(s, emb, testConfig(), nil), corpus.Queries},
		{"named/keyword", knowledge.NewService(s, nil, testConfig(), nil), named},
		{"named/keyword+names", knowledge.NewService(s, nil, names, nil), named},
	} {
		b.Run(m.name, func(b *testing.B) {
			timeSearches(b, func(i int) ([]retrieval.SearchHit, error) {
				resp, err := m.svc.Search(context.Background(), retrieval.SearchRequest{Query: m.queries[i%len(m.queries)]})
				return resp.Hits, err
			})
		})
	}
}

// timeSearches runs search (given the loop's count) b.N times and reports
// the process's CPU time per search (on a shared machine wall times grow
// with the other processes' load, this does not; PostgreSQL's own CPU
// time is not in it), the p50 and p99 wall times and the hits per search.
func timeSearches(b *testing.B, search func(i int) ([]retrieval.SearchHit, error)) {
	var durations []time.Duration
	hits, i := 0, 0
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		start := time.Now()
		found, err := search(i)
		durations = append(durations, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		hits += len(found)
		i++
	}
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/1000/float64(i), "cpu-ms/op")
	reportPercentiles(b, durations)
	b.ReportMetric(float64(hits)/float64(i), "hits/op")
}

// reportPercentiles reports the p50 and p99 of durations in milliseconds.
func reportPercentiles(b *testing.B, durations []time.Duration) {
	slices.Sort(durations)
	pct := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// processCPU is the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSearchBesideALargeTenant measures a small tenant's keyword
// search (1,000 chunks of its own) in a SQLite store that also holds
// another tenant's 100,000 chunks, which share its vocabulary ("zipf":
// the generated corpus) or, worse, all hold the words it asks for
// ("same words"): the other tenant's matches must cost it as little as
// possible.
//
//	go test -run '^$' -bench SearchBesideALargeTenant -benchtime 200x ./internal/knowledge/
func BenchmarkSearchBesideALargeTenant(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		words string // in every chunk of both tenants, and in every query
	}{{"zipf", ""}, {"same words", "harbour lantern keeper"}} {
		b.Run(c.name, func(b *testing.B) {
			large, small := knowledgetest.NewScaleCorpus(5000, 20), knowledgetest.NewScaleCorpus(50, 20)
			for _, corpus := range []knowledgetest.ScaleCorpus{large, small} {
				for _, d := range corpus.Docs {
					for i := range d.Sections {
						d.Sections[i] += " " + c.words
					}
				}
			}
			s, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "chatpipe.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			start := time.Now()
			if err := large.Load(ctx, s, "large", nil); err != nil {
				b.Fatal(err)
			}
			if err := small.Load(ctx, s, "small", nil); err != nil {
				b.Fatal(err)
			}
			b.Logf("loaded %d + %d chunks in %v", large.Chunks(), small.Chunks(), time.Since(start).Round(time.Millisecond))
			svc := knowledge.NewService(s, nil, testConfig(), nil)
			timeSearches(b, func(i int) ([]retrieval.SearchHit, error) {
				q := strings.TrimSpace(large.Queries[i%len(large.Queries)] + " " + c.words)
				resp, err := svc.Search(ctx, retrieval.SearchRequest{TenantID: "small", Query: q})
				for _, h := range resp.Hits {
					if !strings.HasPrefix(h.DocumentID, "small-") {
						b.Fatalf("the small tenant found %s", h.DocumentID)
					}
				}
				return resp.Hits, err
			})
		})
	}
}
