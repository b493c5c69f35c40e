package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	historystore "github.com/chatpipe/chatpipe/internal/history/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/migrations"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openFile(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformanceOnFile(t *testing.T) {
	knowledgetest.Run(t, func(t *testing.T) knowledge.Store {
		return openFile(t, filepath.Join(t.TempDir(), "chatpipe.db"))
	})
}

func TestConformanceInMemory(t *testing.T) {
	knowledgetest.Run(t, func(t *testing.T) knowledge.Store { return openFile(t, MemoryPath) })
}

func addDoc(t *testing.T, s *Store, id, text string, vec []float32) {
	t.Helper()
	_, err := s.AddDocument(t.Context(), knowledge.Document{ID: id, Title: id, Content: text},
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
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	s := openFile(t, path)
	addDoc(t, s, "a", "alpha", []float32{1, 0})
	addDoc(t, s, "b", "bravo", []float32{0, 1})
	v1, _ := s.Version(t.Context())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openFile(t, path)
	defer s.Close()
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

// Two stores on one file stand for two processes: each sees the other's
// changes, vectors included.
func TestSecondStoreOnTheSameFileSeesChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	s1 := openFile(t, path)
	defer s1.Close()
	s2 := openFile(t, path)
	defer s2.Close()

	addDoc(t, s1, "a", "alpha", []float32{1, 0})
	if got := vectorDocs(t, s2, []float32{1, 0}); !slices.Equal(got, []string{"a"}) {
		t.Errorf("other store's vector search = %v, want [a]", got)
	}
	if err := s2.DeleteDocument(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if got := vectorDocs(t, s1, []float32{1, 0}); len(got) != 0 {
		t.Errorf("vector search after the other store deleted = %v, want none", got)
	}
}

func TestSharesTheFileWithTheHistoryStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	h, err := historystore.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("history Open: %v", err)
	}
	defer h.Close()
	s := openFile(t, path)
	addDoc(t, s, "a", "alpha", nil)
	s.Close()

	// Reopening both, in the other order, works: each has its own
	// migrations table.
	s = openFile(t, path)
	defer s.Close()
	h2, err := historystore.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("history reopen: %v", err)
	}
	defer h2.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"schema_migrations", "knowledge_migrations"} {
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil || n == 0 {
			t.Errorf("%s: %d rows, %v", table, n, err)
		}
	}
}

func TestConnectionsUseWALAndForeignKeys(t *testing.T) {
	s := openFile(t, filepath.Join(t.TempDir(), "chatpipe.db"))
	defer s.Close()
	for _, c := range []struct {
		db     *sql.DB
		pragma string
		want   string
	}{
		{s.writer, "journal_mode", "wal"},
		{s.writer, "foreign_keys", "1"},
		{s.reader, "foreign_keys", "1"},
		{s.reader, "query_only", "1"},
	} {
		var got string
		if err := c.db.QueryRow("PRAGMA " + c.pragma).Scan(&got); err != nil || got != c.want {
			t.Errorf("PRAGMA %s = %q, %v; want %q", c.pragma, got, err, c.want)
		}
	}
}

func TestOpenRejectsURIAndDSNPaths(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{"", "file:" + filepath.Join(dir, "k.db"), filepath.Join(dir, "k.db") + "?mode=ro"} {
		if s, err := Open(t.Context(), path); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", path)
		}
	}
}

func TestMatchExpressionQuotesEveryTerm(t *testing.T) {
	for _, c := range []struct {
		terms []string
		want  string
	}{
		{nil, ""},
		{[]string{"foo"}, `"foo"`},
		{[]string{"foo", "and", "知识"}, `"foo" OR "and" OR "知识"`},
		{[]string{`a"b`}, `"a""b"`},
	} {
		if got := matchExpression(c.terms); got != c.want {
			t.Errorf("matchExpression(%q) = %s, want %s", c.terms, got, c.want)
		}
	}
}

// FuzzKeywordSearchNeverFails: any string is a valid query.
func FuzzKeywordSearchNeverFails(f *testing.F) {
	for _, q := range []string{`"foo" AND (`, `NEAR(a b)`, `title:x`, `*`, "中文检索", "a\x00b", "\xff", `""""`, "-", "^a"} {
		f.Add(q)
	}
	s := openFile(f, MemoryPath)
	defer s.Close()
	ctx := context.Background()
	for i, text := range []string{"foo and bar near the title", "中文检索系统的分词", "NEAR AND OR NOT"} {
		id := string(rune('a' + i))
		if _, err := s.AddDocument(ctx, knowledge.Document{ID: id, Title: "title", Content: text},
			[]knowledge.Chunk{{ID: id, Content: text}}); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, q string) {
		if _, err := s.KeywordSearch(ctx, []string{knowledge.DefaultTenant}, q, 5); err != nil {
			t.Errorf("KeywordSearch(%q): %v", q, err)
		}
	})
}

// A database written before tenants existed: its documents become the
// default tenant's, nothing of them is lost (chunks, keyword index,
// embeddings), and other tenants may now store the same content.
func TestMigrationGivesExistingDocumentsToTheDefaultTenant(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	old := migratedTo(t, path, 1)
	// Written the way the version-1 store wrote.
	execAndClose(t, old,
		`INSERT INTO knowledge_documents (id, title, source, media_type, content, content_hash, bytes, chunk_count, embedded, created_at)
		 VALUES ('a', 'Alpha', 'a.md', 'text/markdown', 'alpha words', '`+knowledge.ContentHash("alpha words")+`', 11, 1, 1, '2025-01-01T00:00:00.000000Z'),
		        ('b', 'Bravo', 'b.md', 'text/markdown', 'bravo words', '`+knowledge.ContentHash("bravo words")+`', 11, 1, 0, '2025-01-02T00:00:00.000000Z')`,
		`INSERT INTO knowledge_chunks (seq, id, document_id, idx, content, tokens, embedding) VALUES
		 (1, 'a-0', 'a', 0, 'alpha words', 3, X'0000803F00000000'), (2, 'b-0', 'b', 0, 'bravo words', 3, NULL)`,
		`INSERT INTO knowledge_fts (rowid, title, heading, body) VALUES (1, 'alpha', '', 'alpha words'), (2, 'bravo', '', 'bravo words')`,
	)

	s := openFile(t, path)
	defer s.Close()
	ids, total, err := s.Documents(t.Context(), knowledge.DefaultTenant, 10, 0)
	if err != nil || total != 2 || len(ids) != 2 || ids[0].ID != "b" || ids[1].TenantID != knowledge.DefaultTenant {
		t.Errorf("default tenant's documents = %+v (total %d), %v; want b, a", ids, total, err)
	}
	if d, err := s.Document(t.Context(), "a"); err != nil || d.Content != "alpha words" || d.TenantID != knowledge.DefaultTenant || !d.Embedded {
		t.Errorf("Document(a) = %+v, %v", d, err)
	}
	if chunks, err := s.Chunks(t.Context(), "a"); err != nil || len(chunks) != 1 || chunks[0].Content != "alpha words" {
		t.Errorf("Chunks(a) = %+v, %v", chunks, err)
	}
	if hits, err := s.KeywordSearch(t.Context(), []string{knowledge.DefaultTenant}, "bravo", 10); err != nil || len(hits) != 1 || hits[0].Title != "Bravo" {
		t.Errorf("keyword search = %+v, %v", hits, err)
	}
	if got := vectorDocs(t, s, []float32{1, 0}); !slices.Equal(got, []string{"a"}) {
		t.Errorf("vector search = %v, want [a]", got)
	}
	var stray int
	if err := s.reader.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM knowledge_chunks WHERE tenant_id != 'default'`).Scan(&stray); err != nil || stray != 0 {
		t.Errorf("%d migrated chunks outside the default tenant, %v", stray, err)
	}
	// Deduplication is per tenant now.
	if _, err := s.AddDocument(t.Context(), knowledge.Document{ID: "a2", TenantID: "acme", Content: "alpha words"},
		[]knowledge.Chunk{{ID: "a2-0", Content: "alpha words"}}); err != nil {
		t.Errorf("another tenant adding the same content: %v", err)
	}
	// Deleting a migrated document still takes its chunks (the foreign key
	// survived the rebuild).
	if err := s.DeleteDocument(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	var chunks int
	if err := s.reader.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM knowledge_chunks WHERE document_id = 'a'`).Scan(&chunks); err != nil || chunks != 0 {
		t.Errorf("%d chunks of the deleted document left, %v", chunks, err)
	}
}

func TestMigrationRefusesToLeaveBrokenForeignKeys(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "k.db")+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // the connection the step ran on is the one checked after
	broken := []migrations.Migration{{Version: 1, Name: "0001_broken.sql", SQL: `
		CREATE TABLE knowledge_parent (id TEXT PRIMARY KEY);
		CREATE TABLE knowledge_child (parent TEXT REFERENCES knowledge_parent (id));
		INSERT INTO knowledge_child VALUES ('missing');`}}
	if err := migrate(t.Context(), db, broken, time.Now); err == nil {
		t.Fatal("a step leaving a dangling reference was applied")
	}
	var tables int
	if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_schema WHERE name = 'knowledge_child'`).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("the failed step left its table (%d), %v", tables, err)
	}
	var fk int
	if err := db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d after the failed step, %v; want 1", fk, err)
	}
}

// A chunk's copy of its document's tenant (what the keyword search filters
// on) cannot drift from the document's.
func TestChunkTenantIsAlwaysItsDocuments(t *testing.T) {
	s := openFile(t, MemoryPath)
	defer s.Close()
	if _, err := s.AddDocument(t.Context(), knowledge.Document{ID: "a", TenantID: "acme", Content: "alpha"},
		[]knowledge.Chunk{{ID: "a-0", Content: "alpha"}}); err != nil {
		t.Fatal(err)
	}
	var tenant string
	if err := s.reader.QueryRowContext(t.Context(), `SELECT tenant_id FROM knowledge_chunks WHERE id = 'a-0'`).Scan(&tenant); err != nil || tenant != "acme" {
		t.Errorf("chunk tenant = %q, %v; want acme", tenant, err)
	}
	for _, stmt := range []string{
		`INSERT INTO knowledge_chunks (id, document_id, tenant_id, idx, content, tokens) VALUES ('a-1', 'a', 'globex', 1, 'x', 1)`,
		`INSERT INTO knowledge_chunks (id, document_id, idx, content, tokens) VALUES ('a-1', 'a', 1, 'x', 1)`, // the column default
		`UPDATE knowledge_chunks SET tenant_id = 'globex' WHERE id = 'a-0'`,
		`UPDATE knowledge_documents SET tenant_id = 'globex' WHERE id = 'a'`,
	} {
		if _, err := s.writer.ExecContext(t.Context(), stmt); err == nil {
			t.Errorf("%s: succeeded", stmt)
		}
	}
}

// Two stores on one file: a store's own write must not mark its vector
// copy current when the other store wrote in between.
func TestOwnWriteAfterAnotherStoresWriteKeepsBoth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	s1, s2 := openFile(t, path), openFile(t, path)
	defer s1.Close()
	defer s2.Close()
	for _, x := range []struct {
		s        *Store
		id, text string
		vec      []float32
	}{{s2, "theirs", "alpha", []float32{1, 0}}, {s1, "ours", "bravo", []float32{1, 0.1}}} {
		if _, err := x.s.AddDocument(t.Context(), knowledge.Document{ID: x.id, Title: x.id, Content: x.text},
			[]knowledge.Chunk{{ID: x.id + "-0", Content: x.text, Embedding: x.vec}}); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := s1.VectorSearch(t.Context(), knowledge.DefaultTenant, []float32{1, 0}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.DocumentID)
	}
	if len(ids) != 2 || ids[0] != "theirs" || ids[1] != "ours" {
		t.Fatalf("vector search = %v, want [theirs ours]", ids)
	}
}
