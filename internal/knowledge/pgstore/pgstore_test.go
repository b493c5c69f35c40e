package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	historystore "github.com/chatpipe/chatpipe/internal/history/pgstore"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/migrations"
	"github.com/chatpipe/chatpipe/internal/pgdb/pgdbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openSchema opens a store on schema with vector search on the in-memory
// real[] path, whose replica logic the tests below check, and closes it
// when the test ends.
func openSchema(t testing.TB, schema string) *Store {
	t.Helper()
	return openWith(t, Options{MaxConns: 4, Schema: schema, NoPgvector: true})
}

// openWith opens a store with opts and closes it when the test ends.
func openWith(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgdbtest.DSN(t), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the suite on both vector search paths, on one
// server, each store in a schema of its own: real[] (forced, as where the
// server lacks pgvector) and pgvector's HNSW index (skipped without the
// extension unless CHATPIPE_TEST_PGVECTOR=1, as in CI, makes that fail).
func TestConformance(t *testing.T) {
	pgdbtest.DSN(t)
	t.Run("real[]", func(t *testing.T) {
		knowledgetest.Run(t, func(t *testing.T) knowledge.Store { return openSchema(t, pgdbtest.NewSchema(t)) })
	})
	t.Run("pgvector", func(t *testing.T) {
		requirePgvector(t)
		knowledgetest.Run(t, func(t *testing.T) knowledge.Store { return openPgvector(t, pgdbtest.NewSchema(t)) })
	})
}

func addDoc(t testing.TB, s *Store, id, text string, vec []float32) {
	t.Helper()
	_, err := s.AddDocument(context.Background(), knowledge.Document{ID: id, Title: id, Content: text},
		[]knowledge.Chunk{{ID: id + "-0", Content: text, Embedding: vec}})
	if err != nil {
		t.Fatalf("AddDocument(%s): %v", id, err)
	}
}

func vectorDocs(t *testing.T, s *Store, q []float32) []string {
	t.Helper()
	hits, err := s.VectorSearch(t.Context(), knowledge.DefaultTenant, q, 10)
	if err != nil {
		t.Fatalf("VectorSearch: %v", err)
	}
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.DocumentID)
	}
	return ids
}

func TestReopenLoadsEmbeddingsAndKeepsVersionMoving(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	s := openSchema(t, schema)
	t.Logf("vector search on the server (pgvector): %v", s.pgvector)
	addDoc(t, s, "a", "alpha", []float32{1, 0})
	addDoc(t, s, "b", "bravo", []float32{0, 1})
	v1, _ := s.Version(t.Context())
	s.Close()

	s = openSchema(t, schema)
	if got := vectorDocs(t, s, []float32{1, 0.1}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("after reopen, vector search = %v, want [a b]", got)
	}
	v2, _ := s.Version(t.Context())
	if v2 != v1 {
		t.Errorf("Version after reopen = %d, want %d", v2, v1)
	}
	if err := s.DeleteDocument(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if v3, _ := s.Version(t.Context()); v3 == v2 {
		t.Error("Version did not change after a delete")
	}
}

// Two stores on one schema stand for two replicas: each sees the other's
// changes, vectors included.
func TestSecondReplicaSeesChanges(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	s1, s2 := openSchema(t, schema), openSchema(t, schema)

	addDoc(t, s1, "a", "alpha", []float32{1, 0})
	if got := vectorDocs(t, s2, []float32{1, 0}); !slices.Equal(got, []string{"a"}) {
		t.Errorf("other replica's vector search = %v, want [a]", got)
	}
	if err := s2.DeleteDocument(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if got := vectorDocs(t, s1, []float32{1, 0}); len(got) != 0 {
		t.Errorf("vector search after the other replica deleted = %v, want none", got)
	}
}

// TestOwnWriteAfterAnotherReplicasWriteKeepsBoth: a replica's own write
// must not mark its vectors current while they lack another replica's
// earlier write.
func TestOwnWriteAfterAnotherReplicasWriteKeepsBoth(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	s1, s2 := openSchema(t, schema), openSchema(t, schema)
	addDoc(t, s2, "theirs", "alpha", []float32{1, 0})
	addDoc(t, s1, "ours", "bravo", []float32{1, 0.1})
	if got := vectorDocs(t, s1, []float32{1, 0}); !slices.Equal(got, []string{"theirs", "ours"}) {
		t.Errorf("vector search = %v, want [theirs ours]", got)
	}
}

func TestConcurrentDuplicateAddsOnTwoReplicasStoreOneDocument(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	replicas := []*Store{openSchema(t, schema), openSchema(t, schema)}
	const n = 8
	start := make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = replicas[i%2].AddDocument(t.Context(), knowledge.Document{ID: fmt.Sprintf("d%d", i), Content: "same"},
				[]knowledge.Chunk{{ID: fmt.Sprintf("d%d-0", i), Content: "same"}})
		})
	}
	close(start)
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, knowledge.ErrDuplicate):
			t.Errorf("AddDocument: %v, want nil or ErrDuplicate", err)
		}
	}
	if _, total, _ := replicas[0].Documents(t.Context(), "", 10, 0); ok != 1 || total != 1 {
		t.Errorf("%d adds succeeded, %d documents stored; want 1 and 1", ok, total)
	}
}

// TestSharesTheSchemaWithTheHistoryStore: both stores open at once on one
// schema, each with its own migrations table.
func TestSharesTheSchemaWithTheHistoryStore(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	var (
		wg         sync.WaitGroup
		kerr, herr error
		k          *Store
		h          *historystore.Store
	)
	wg.Go(func() { k, kerr = Open(t.Context(), pgdbtest.DSN(t), Options{MaxConns: 2, Schema: schema}) })
	wg.Go(func() {
		h, herr = historystore.Open(t.Context(), pgdbtest.DSN(t), historystore.Options{MaxConns: 2, Schema: schema})
	})
	wg.Wait()
	if kerr != nil || herr != nil {
		t.Fatalf("Open: knowledge %v, history %v", kerr, herr)
	}
	defer k.Close()
	defer h.Close()
	for _, table := range []string{"schema_migrations", "knowledge_migrations"} {
		var n int
		if err := k.pool.QueryRow(t.Context(), `SELECT count(*) FROM `+table).Scan(&n); err != nil || n == 0 {
			t.Errorf("%s: %d rows, %v", table, n, err)
		}
	}
}

func TestConcurrentOpensOfOneSchemaMigrateOnce(t *testing.T) {
	t.Parallel()
	const replicas = 4
	schema := pgdbtest.NewSchema(t)
	start := make(chan struct{})
	stores := make([]*Store, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = Open(t.Context(), pgdbtest.DSN(t), Options{MaxConns: 2, Schema: schema})
		})
	}
	close(start)
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Errorf("Open %d: %v", i, errs[i])
			continue
		}
		t.Cleanup(func() { s.Close() })
	}
	if t.Failed() {
		return
	}
	ms, err := migrations.Load(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := stores[0].pool.QueryRow(t.Context(), `SELECT count(*) FROM knowledge_migrations`).Scan(&n); err != nil || n != len(ms) {
		t.Errorf("knowledge_migrations has %d rows, %v; want each of the %d migrations once", n, err, len(ms))
	}
	for i, s := range stores {
		addDoc(t, s, fmt.Sprintf("d%d", i), fmt.Sprintf("text %d", i), nil)
	}
}

func TestOpenRefusesDatabaseFromNewerBuild(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.NewSchema(t)
	s := openSchema(t, schema)
	if _, err := s.pool.Exec(t.Context(),
		`INSERT INTO knowledge_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', now())`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err := Open(t.Context(), pgdbtest.DSN(t), Options{Schema: schema})
	if err == nil {
		s.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("err = %v, want it to say the schema is newer", err)
	}
}

// TestOpenErrorsNeverShowThePassword needs no server: nothing listens on
// port 1, and the malformed DSNs never reach the network.
func TestOpenErrorsNeverShowThePassword(t *testing.T) {
	t.Parallel()
	const password = "s3cr3t-Pa55word"
	for _, dsn := range []string{
		"postgres://chatpipe:" + password + "@127.0.0.1:1/chat?sslmode=disable",
		"host=127.0.0.1 port=1 user=chatpipe password=" + password + " dbname=chat",
		"postgres://chatpipe:" + password + "@127.0.0.1:port/chat",
	} {
		s, err := Open(t.Context(), dsn, Options{})
		if err == nil {
			s.Close()
			t.Fatal("Open succeeded")
		}
		for e := err; e != nil; e = errors.Unwrap(e) {
			if strings.Contains(e.Error(), password) {
				t.Errorf("error shows the password: %v", e)
			}
		}
	}
}

// A chunk's copy of its document's tenant (what both searches filter on)
// cannot drift from the document's.
func TestChunkTenantIsAlwaysItsDocuments(t *testing.T) {
	t.Parallel()
	s := openSchema(t, pgdbtest.NewSchema(t))
	if _, err := s.AddDocument(t.Context(), knowledge.Document{ID: "a", TenantID: "acme", Content: "alpha"},
		[]knowledge.Chunk{{ID: "a-0", Content: "alpha"}}); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO knowledge_chunks (id, document_id, tenant_id, idx, content, tokens, terms) VALUES ('a-1', 'a', 'globex', 1, 'x', 1, '')`,
		`UPDATE knowledge_chunks SET tenant_id = 'globex' WHERE id = 'a-0'`,
		`UPDATE knowledge_documents SET tenant_id = 'globex' WHERE id = 'a'`,
	} {
		if _, err := s.pool.Exec(t.Context(), stmt); err == nil {
			t.Errorf("%s: succeeded", stmt)
		}
	}
}

func TestQueryOperandsQuoteEveryTermOnce(t *testing.T) {
	for query, want := range map[string]string{
		"":                       "",
		"?!…":                    "",
		"foo":                    `'foo'`,
		"Foo foo FOO":            `'foo'`,
		"the foo and 知识":         `'foo' '知识'`,
		"Ünïcödé unicode":        `'unicod'`, // folded alike, then once
		"'; DROP TABLE x; -- \\": `'drop' 'tabl' 'x'`,
	} {
		if got := strings.Join(queryOperands(knowledge.WordQueryTerms(query), ""), " "); got != want {
			t.Errorf("queryOperands(WordQueryTerms(%q)) = %s, want %s", query, got, want)
		}
	}
	// a quote inside a term is doubled; a label follows each operand
	if got := queryOperands([]string{"tar", "o'neil", "tar"}, ":B"); !slices.Equal(got, []string{"'tar':B", "'o''neil':B"}) {
		t.Errorf("title operands = %q", got)
	}
}

func TestFoldDiacriticsRemovesLatinAccentsOnly(t *testing.T) {
	for in, want := range map[string]string{
		"ünïcödé":     "unicode",
		"e\u0301":     "e",
		"sección":     "seccion",
		"ǆ ﬁ":         "ǆ ﬁ",
		"кириллица й": "кириллица й", // Cyrillic keeps its breve
		"हिन्दी":      "हिन्दी",      // Devanagari keeps its vowel signs
		"한국어 知识 ไทย":  "한국어 知识 ไทย",
		"plain ascii": "plain ascii",
	} {
		if got := knowledge.FoldLatin(in); got != want {
			t.Errorf("FoldLatin(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzKeywordSearchNeverFails: any string is a valid query.
func FuzzKeywordSearchNeverFails(f *testing.F) {
	for _, q := range []string{`'foo' & (`, `a <-> b`, `!x`, `x:*`, "中文检索", "a\x00b", "\xff", `''''`, `\`, "|"} {
		f.Add(q)
	}
	s := openSchema(f, pgdbtest.NewSchema(f))
	ctx := context.Background()
	for i, text := range []string{"foo and bar near the title", "中文检索系统的分词", "NEAR AND OR NOT"} {
		addDoc(f, s, string(rune('a'+i)), text, nil)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if _, err := s.KeywordSearch(ctx, []string{knowledge.DefaultTenant}, q, 5); err != nil {
			t.Errorf("KeywordSearch(%q): %v", q, err)
		}
	})
}
