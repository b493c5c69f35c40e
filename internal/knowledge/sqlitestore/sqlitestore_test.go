package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/goleak"

	historystore "github.com/chatpipe/chatpipe/internal/history/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
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
	hits, err := s.VectorSearch(t.Context(), q, 10)
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
		if _, err := s.KeywordSearch(ctx, q, 5); err != nil {
			t.Errorf("KeywordSearch(%q): %v", q, err)
		}
	})
}
