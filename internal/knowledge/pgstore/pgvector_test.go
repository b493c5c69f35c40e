package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/vectorindex"
	"github.com/chatpipe/chatpipe/internal/pgdb/pgdbtest"
)

// requirePgvector skips the test when the server cannot run pgvector,
// unless CHATPIPE_TEST_PGVECTOR=1 (set by .ci/run, which installs it):
// then that fails.
func requirePgvector(t testing.TB) {
	t.Helper()
	dsn := pgdbtest.DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10e9)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var available bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`).Scan(&available); err != nil {
		t.Fatal(err)
	}
	if available {
		return
	}
	if os.Getenv("CHATPIPE_TEST_PGVECTOR") == "1" {
		t.Fatal("CHATPIPE_TEST_PGVECTOR=1 but the server has no pgvector extension (../shared/vendor/install-pgvector.sh installs it)")
	}
	t.Skip("the pgvector extension is unavailable on this server (../shared/vendor/install-pgvector.sh installs it; CHATPIPE_TEST_PGVECTOR=1 makes this a failure)")
}

// openPgvector opens a store on schema that must use pgvector.
func openPgvector(t testing.TB, schema string) *Store {
	t.Helper()
	requirePgvector(t)
	s := openWith(t, Options{MaxConns: 4, Schema: schema})
	if !s.pgvector {
		t.Fatalf("store does not use pgvector: %s", s.VectorSearchBackend())
	}
	return s
}

func TestOpenChoosesTheVectorSearchBackend(t *testing.T) {
	t.Parallel()
	requirePgvector(t)
	schema := pgdbtest.NewSchema(t)
	if got := openWith(t, Options{Schema: schema}).VectorSearchBackend(); got != "pgvector HNSW" {
		t.Errorf("backend = %q, want pgvector HNSW", got)
	}
	if got := openWith(t, Options{Schema: schema, NoPgvector: true}).VectorSearchBackend(); got != "real[] (pgvector off by configuration)" {
		t.Errorf("backend with NoPgvector = %q", got)
	}
}

// indexNames lists the HNSW indexes of the store's chunks. The catalogs
// are read by the table's OID (resolved in the store's own schema), not
// through pg_indexes: that view may evaluate pg_get_indexdef on the
// indexes of every schema's knowledge_chunks before filtering by schema,
// and fails with "could not open relation" when a parallel test drops
// its schema meanwhile.
func indexNames(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.pool.Query(t.Context(), `SELECT c.relname::text FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
		WHERE i.indrelid = 'knowledge_chunks'::regclass AND am.amname = 'hnsw' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// Each embedding dimension gets its HNSW index with its first embedding;
// dimensions stored while vector search was on real[] get theirs when a
// pgvector store opens the schema.
func TestHNSWIndexPerDimension(t *testing.T) {
	t.Parallel()
	requirePgvector(t)
	schema := pgdbtest.NewSchema(t)
	plain := openSchema(t, schema)
	addDoc(t, plain, "early", "stored before pgvector", []float32{1, 0, 0, 0})
	if got := indexNames(t, plain); len(got) != 0 {
		t.Errorf("real[] store created %v", got)
	}
	s := openPgvector(t, schema)
	// The index built on stored chunks comes with statistics for the
	// planner (ANALYZE), or it would not use the index after a bulk load.
	// Asked by the table's OID: pg_stats checks privileges on every
	// schema's knowledge_chunks, which fails on one being dropped.
	var analyzed bool
	if err := s.pool.QueryRow(t.Context(),
		`SELECT pg_stat_get_analyze_count('knowledge_chunks'::regclass) > 0`).Scan(&analyzed); err != nil || !analyzed {
		t.Errorf("knowledge_chunks has no statistics after the HNSW index was built at Open (%v)", err)
	}
	addDoc(t, s, "a", "alpha", []float32{1, 0})
	addDoc(t, s, "b", "bravo", []float32{0, 1})
	addDoc(t, s, "c", "charlie", make3000(1))
	want := []string{"knowledge_chunks_hnsw_2", "knowledge_chunks_hnsw_3000", "knowledge_chunks_hnsw_4"}
	if got := indexNames(t, s); !slices.Equal(got, want) {
		t.Errorf("HNSW indexes = %v, want %v", got, want)
	}
	if got := vectorDocs(t, s, []float32{1, 0, 0, 0}); !slices.Equal(got, []string{"early"}) {
		t.Errorf("4-dim search = %v, want [early]", got)
	}
	if got := vectorDocs(t, s, make3000(2)); !slices.Equal(got, []string{"c"}) {
		t.Errorf("3000-dim (halfvec) search = %v, want [c]", got)
	}
}

func make3000(x float32) []float32 {
	v := make([]float32, 3000)
	v[0], v[1] = 1, x
	return v
}

// explainOn returns the plan of the store's vector search for q in tenant.
func (s *Store) explainOn(t *testing.T, db rowsQuerier, tenantID string, q []float32) string {
	t.Helper()
	typ, _ := s.ext.vectorType(len(q))
	rows, err := db.Query(t.Context(), `EXPLAIN SELECT seq FROM knowledge_chunks
		WHERE tenant_id = $2 AND cardinality(embedding) = `+fmt.Sprint(len(q))+`
		ORDER BY embedding::`+typ+` OPERATOR(`+s.ext.schema+`.<=>) $1::real[]::`+typ+` LIMIT 20`,
		pgx.QueryExecModeExec, vectorindex.Normalize(q), tenantID)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestHNSWSearchAtScale: 3,150 chunks of 64 dimensions in three tenants:
// "big" (2,400), "mid" (600) and "small" (150). The big and mid tenants'
// searches use the HNSW index and find nearly every true neighbour
// (recall against the exact real[] search of the same data); the mid
// tenant's 50 nearest need more candidates than one list of ef_search
// holds once the big tenant's are filtered out (iterative scans); the
// small tenant's find all of their 10 (the planner's exact plan).
func TestHNSWSearchAtScale(t *testing.T) {
	t.Parallel()
	requirePgvector(t)
	schema := pgdbtest.NewSchema(t)
	s := openPgvector(t, schema)
	rng := rand.New(rand.NewPCG(1, 2))
	randVec := func() []float32 {
		v := make([]float32, 64)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	for d := range 105 {
		tenant := "big"
		switch {
		case d >= 100:
			tenant = "small"
		case d >= 80:
			tenant = "mid"
		}
		chunks := make([]knowledge.Chunk, 30)
		for i := range chunks {
			chunks[i] = knowledge.Chunk{ID: fmt.Sprintf("d%d-%d", d, i), Index: i, Content: "text", Embedding: randVec()}
		}
		if _, err := s.AddDocument(t.Context(), knowledge.Document{ID: fmt.Sprintf("d%d", d), TenantID: tenant,
			Content: fmt.Sprintf("document %d", d)}, chunks); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(t.Context(), `ANALYZE knowledge_chunks`); err != nil {
		t.Fatal(err)
	}
	exact := openSchema(t, schema) // the same data, searched exactly
	if plan := s.explainOn(t, s.pool, "big", randVec()); !strings.Contains(plan, "knowledge_chunks_hnsw_64") {
		t.Errorf("the big tenant's search does not use the HNSW index:\n%s", plan)
	}
	// At this size the planner searches the mid tenant exactly; a
	// connection that may not sort makes it use the index.
	conn, err := s.pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(t.Context(), `SET enable_sort = off`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), `RESET enable_sort`) //nolint:errcheck // the pool's connection goes back clean
	if plan := s.explainOn(t, conn, "mid", randVec()); !strings.Contains(plan, "knowledge_chunks_hnsw_64") {
		t.Errorf("the mid tenant's search does not use the HNSW index:\n%s", plan)
	}
	for _, tc := range []struct {
		tenant string
		limit  int
		db     rowsQuerier
	}{{"big", 10, s.pool}, {"mid", 50, conn}, {"small", 10, s.pool}} {
		found, total := 0, 0
		for range 30 {
			q := randVec()
			want := chunkSet(vectorHits(t, exact, tc.tenant, q, tc.limit))
			got, err := s.pgvectorSearchOn(t.Context(), tc.db, tc.tenant, vectorindex.Normalize(q), tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.limit {
				t.Fatalf("%s tenant: %d hits, want %d", tc.tenant, len(got), tc.limit)
			}
			for _, h := range got {
				if want[h.ChunkID] {
					found++
				}
			}
			total += len(want)
		}
		if recall := float64(found) / float64(total); recall < 0.95 {
			t.Errorf("%s tenant: HNSW recall@%d = %.3f, want ≥ 0.95", tc.tenant, tc.limit, recall)
		} else {
			t.Logf("%s tenant: HNSW recall@%d = %.3f", tc.tenant, tc.limit, recall)
		}
	}
}

func vectorHits(t *testing.T, s *Store, tenantID string, q []float32, limit int) []knowledge.Hit {
	t.Helper()
	hits, err := s.VectorSearch(t.Context(), tenantID, q, limit)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func chunkSet(hits []knowledge.Hit) map[string]bool {
	m := map[string]bool{}
	for _, h := range hits {
		m[h.ChunkID] = true
	}
	return m
}
