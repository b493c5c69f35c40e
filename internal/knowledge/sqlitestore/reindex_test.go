package sqlitestore

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/migrations"
)

// A database indexed before stemming (migration 0002, unstemmed terms) is
// re-indexed when a newer chatpipe opens it: "return" then finds
// "returned", which the old index could not.
func TestOpenReindexesTermsOfAnOlderIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	old := migratedTo(t, path, 2)
	const content = "Items can be returned within 30 days."
	execAndClose(t, old,
		`INSERT INTO knowledge_documents (id, title, content, content_hash, bytes, chunk_count, embedded, created_at)
		 VALUES ('r', 'Returns', '`+content+`', '`+knowledge.ContentHash(content)+`', 37, 1, 0, '2025-01-01T00:00:00.000000Z')`,
		`INSERT INTO knowledge_chunks (seq, id, document_id, idx, content, tokens) VALUES (1, 'r-0', 'r', 0, '`+content+`', 9)`,
		// As the store wrote terms before stemming.
		`INSERT INTO knowledge_fts (rowid, title, heading, body) VALUES (1, 'returns', '', 'items can be returned within 30 days')`,
	)

	s := openFile(t, path)
	defer s.Close()
	hits, err := s.KeywordSearch(t.Context(), []string{knowledge.DefaultTenant}, "return policy", 10)
	if err != nil || len(hits) != 1 || hits[0].Title != "Returns" {
		t.Fatalf("KeywordSearch(return policy) = %+v, %v; want the re-indexed Returns", hits, err)
	}
	var version int
	if err := s.reader.QueryRowContext(t.Context(), `SELECT terms_version FROM knowledge_state`).Scan(&version); err != nil || version != knowledge.TermsVersion {
		t.Errorf("terms_version = %d, %v; want %d", version, err, knowledge.TermsVersion)
	}
	// Opening again finds the index current and leaves it be.
	if n, err := reindexTerms(t.Context(), s.writer); err != nil || n != 0 {
		t.Errorf("second reindex = %d, %v; want nothing to do", n, err)
	}
}

// A database whose keyword index has no tenant column (before migration
// 0010) is re-indexed with one when a newer chatpipe opens it, and a
// search of one tenant then finds its chunks only, through FTS5.
func TestOpenAddsTenantsToAnOlderIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	old := migratedTo(t, path, 9)
	stmts := []string{fmt.Sprintf(`UPDATE knowledge_state SET terms_version = %d`, knowledge.TermsVersion)}
	for i, tenant := range []string{"acme", "beta"} {
		content := "The " + tenant + " lighthouse keeps its lamp lit all night."
		id := tenant + "-doc"
		stmts = append(stmts,
			fmt.Sprintf(`INSERT INTO knowledge_documents (id, tenant_id, title, content, content_hash, bytes, chunk_count, embedded, created_at)
			 VALUES ('%s', '%s', 'Lighthouse', '%s', '%s', %d, 1, 0, '2025-01-01T00:00:00.000000Z')`, id, tenant, content, knowledge.ContentHash(content), len(content)),
			fmt.Sprintf(`INSERT INTO knowledge_chunks (seq, id, document_id, tenant_id, idx, content, tokens) VALUES (%d, '%s-0', '%s', '%s', 0, '%s', 10)`, i+1, id, id, tenant, content),
			fmt.Sprintf(`INSERT INTO knowledge_fts (rowid, title, heading, body) VALUES (%d, '%s', '', '%s')`, i+1,
				knowledge.IndexText(knowledge.TitleText("Lighthouse", content)), knowledge.IndexText(content)))
	}
	execAndClose(t, old, stmts...)

	s := openFile(t, path)
	defer s.Close()
	for _, tenant := range []string{"acme", "beta"} {
		hits, err := s.keywordSearch(t.Context(), []string{tenant}, knowledge.QueryTerms("lighthouse lamp"), nil, 10, true)
		if err != nil || len(hits) != 1 || hits[0].DocumentID != tenant+"-doc" {
			t.Errorf("%s's search = %+v, %v; want its own document only", tenant, hits, err)
		}
	}
	if hits, err := s.keywordSearch(t.Context(), []string{"gamma"}, knowledge.QueryTerms("lighthouse lamp"), nil, 10, true); err != nil || len(hits) != 0 {
		t.Errorf("another tenant's search = %+v, %v; want nothing", hits, err)
	}
}

// A chatpipe of before migration 0010 still running on the file writes
// index rows without a tenant term; the next Open finds them and
// re-indexes, so a search filtered by tenant finds those chunks again.
func TestOpenReindexesRowsWrittenWithoutATenant(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	s := openFile(t, path)
	for _, tenant := range []string{"acme", "beta"} {
		if _, err := s.AddDocument(t.Context(), knowledge.Document{ID: tenant + "-doc", TenantID: tenant, Title: "Lighthouse", Content: "The lamp is lit."},
			[]knowledge.Chunk{{ID: tenant + "-doc-0", Content: "The lamp is lit."}}); err != nil {
			t.Fatal(err)
		}
	}
	// As the old binary writes a document: its index row has no tenant.
	const content = "The foghorn sounds in the mist."
	for _, stmt := range []string{
		`INSERT INTO knowledge_documents (id, tenant_id, title, content, content_hash, bytes, chunk_count, embedded, created_at)
		 VALUES ('old', 'acme', 'Foghorn', '` + content + `', '` + knowledge.ContentHash(content) + `', 31, 1, 0, '2025-01-01T00:00:00.000000Z')`,
		`INSERT INTO knowledge_chunks (seq, id, document_id, tenant_id, idx, content, tokens) VALUES (100, 'old-0', 'old', 'acme', 0, '` + content + `', 8)`,
		`INSERT INTO knowledge_fts (rowid, title, heading, body) VALUES (100, 'foghorn', '', '` + knowledge.IndexText(content) + `')`,
	} {
		if _, err := s.writer.ExecContext(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	find := func(s *Store) []knowledge.Hit {
		hits, err := s.keywordSearch(t.Context(), []string{"acme"}, knowledge.QueryTerms("foghorn mist"), nil, 10, true)
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	if hits := find(s); len(hits) != 0 {
		t.Fatalf("before a reopen the untagged row is found: %+v (the test no longer shows the hazard)", hits)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openFile(t, path)
	defer s.Close()
	if hits := find(s); len(hits) != 1 || hits[0].DocumentID != "old" {
		t.Errorf("after a reopen: %+v; want the old binary's document", hits)
	}
}

// execAndClose runs stmts on db, as an older version of the store would
// have written them, and closes it.
func execAndClose(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, stmt := range stmts {
		if _, err := db.ExecContext(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// migratedTo opens a database at path migrated to version only, as an
// older chatpipe left it; the caller closes it (execAndClose).
func migratedTo(t *testing.T, path string, version int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := migrations.Load(migrationFiles)
	if err != nil || len(ms) <= version || ms[version-1].Version != version {
		t.Fatalf("migrations = %v, %v", ms, err)
	}
	if err := migrate(t.Context(), db, ms[:version], time.Now); err != nil {
		t.Fatalf("migrate to version %d: %v", version, err)
	}
	return db
}
