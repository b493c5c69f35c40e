package app_test

import (
	"os"
	"testing"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// TestPostgresVectorSearchBackendIsLoggedAndServesSearch: on PostgreSQL
// the server says at start how it searches vectors (pgvector's HNSW index
// or real[] in memory, postgres.pgvector: off), and hybrid search through
// the API finds a document by its embedding either way.
func TestPostgresVectorSearchBackendIsLoggedAndServesSearch(t *testing.T) {
	for _, tc := range []struct{ mode, log string }{
		{"off", "knowledge: vector search via real[] (pgvector off by configuration)"},
		{"auto", "knowledge: vector search via pgvector HNSW"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dsn := postgresSchema(t)
			if tc.mode == "auto" && os.Getenv("CHATPIPE_TEST_PGVECTOR") != "1" {
				t.Skip("CHATPIPE_TEST_PGVECTOR not set: the server may lack pgvector (.ci/run installs it)")
			}
			provider := providertest.New(t)
			emb := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 64})
			cfg := baseConfig(t, provider)
			cfg.Storage.Driver = "postgres"
			cfg.Postgres.DSN = dsn
			cfg.Postgres.Pgvector = tc.mode
			cfg.Knowledge.SampleDocs = false
			cfg.Knowledge.Embedding = config.Embedding{Provider: "openai", BaseURL: emb.BaseURL(), Model: "e", BatchSize: 8, Timeout: 5e9}
			h := startHarness(t, provider, cfg, "")
			if n := h.logs.FilterMessage(tc.log).Len(); n != 1 {
				t.Errorf("log %q written %d times, want once", tc.log, n)
			}
			h.addDocument("Returns", "# Returns\n\nItems can be returned within thirty days of delivery.")
			h.addDocument("Shipping", "# Shipping\n\nParcels leave the warehouse every weekday morning.")
			r := h.search("thirty days delivery")
			if len(r.Hits) == 0 || r.Hits[0].Title != "Returns" || r.Hits[0].VectorRank != 1 {
				t.Fatalf("search = %+v, want Returns first, ranked first by vector search too", r)
			}
		})
	}
}
