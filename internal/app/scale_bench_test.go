package app_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	ksqlite "github.com/chatpipe/chatpipe/internal/knowledge/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// BenchmarkTimeToFirstAnswerByte100kChunks is BenchmarkTimeToFirstAnswerByte
// with a knowledge base of 100,000 chunks (knowledgetest.ScaleCorpus,
// keyword search as configured by default, no embeddings), built once per
// run into the server's SQLite file before it starts: the rag run's time
// minus the chat run's is what searching 100,000 chunks adds to the first
// answer byte. Each question is one of the corpus's queries, in a new
// session. The last run adds 200 shared chunks first (as the default
// configuration shares the sample documents): own and shared chunks are
// ranked by one query.
//
//	go test -run '^$' -bench TimeToFirstAnswerByte100kChunks -benchtime 300x ./internal/app/
func BenchmarkTimeToFirstAnswerByte100kChunks(b *testing.B) {
	provider := providertest.New(b)
	provider.SetDefault(providertest.Script{Chunks: providertest.Answer("first byte then the rest of the answer", 8), NoRolePreamble: true})
	corpus := knowledgetest.NewScaleCorpus(5000, 20)
	cfg := benchConfig(b, provider.BaseURL())
	cfg.Knowledge.SampleDocs = false
	store, err := ksqlite.Open(context.Background(), cfg.Storage.SQLite.Path)
	if err != nil {
		b.Fatal(err)
	}
	if err := corpus.Load(context.Background(), store, knowledge.DefaultTenant, nil); err != nil {
		b.Fatal(err)
	}
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
	srv, _ := benchApp(b, cfg, &http.Client{Transport: &http.Transport{}})
	run := func(name, mode string) {
		b.Run(name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{}}
			var durations []time.Duration
			i := 0
			cpu0 := cpuTime()
			for b.Loop() {
				b.StopTimer()
				session := newSession(b, client, srv.URL, mode)
				b.StartTimer()
				before := b.Elapsed()
				// Timed up to the first answer.delta (firstAnswerDelta
				// stops the timer for the rest).
				firstAnswerDelta(b, client, srv.URL, session, corpus.Queries[i%len(corpus.Queries)])
				durations = append(durations, b.Elapsed()-before)
				i++
			}
			slices.Sort(durations)
			pct := func(p float64) float64 {
				return float64(durations[int(p*float64(len(durations)-1))].Microseconds()) / 1000
			}
			// The server's (the process's) CPU time per question, all of
			// it: new session, search, answer; steadier than wall time on
			// a shared machine.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(i), "cpu-ms/op")
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
		})
	}
	run("chatpipe-chat", "chat")
	run("chatpipe-rag", "rag")
	// As deployed by default, where the sample documents are shared: 200
	// shared chunks besides the 100,000, searched in the same query.
	store, err = ksqlite.Open(context.Background(), cfg.Storage.SQLite.Path)
	if err != nil {
		b.Fatal(err)
	}
	if err := knowledgetest.NewScaleCorpus(10, 20).Load(context.Background(), store, knowledge.SharedTenant, nil); err != nil {
		b.Fatal(err)
	}
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
	run("chatpipe-rag-with-shared", "rag")
}
