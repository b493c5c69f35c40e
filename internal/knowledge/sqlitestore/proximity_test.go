package sqlitestore

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// Two chunks with the same words, in another order: the one holding the
// query's words near each other ranks first, although it was added last
// (equal scores keep the order of addition).
// In memory the pairs are scored in the search's transaction, on a file
// on a second connection (rankNear).
func TestKeywordSearchRanksQueryWordsNearEachOtherFirst(t *testing.T) {
	for name, path := range map[string]string{"memory": MemoryPath, "file": filepath.Join(t.TempDir(), "chatpipe.db")} {
		t.Run(name, func(t *testing.T) {
			s := openFile(t, path)
			defer s.Close()
			addDoc(t, s, "apart", "child alpha bravo charlie delta echo foxtrot golf hotel india process", nil)
			addDoc(t, s, "together", "alpha bravo charlie delta echo foxtrot golf hotel india child process", nil)
			hits, err := s.KeywordSearch(t.Context(), []string{knowledge.DefaultTenant}, "a child process", 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != 2 || hits[0].DocumentID != "together" || !(hits[0].Score > hits[1].Score) {
				t.Fatalf("hits = %+v; want together first, with the higher score", hits)
			}
		})
	}
}

// The pairs' bonus is added to the terms' best nearWindow(limit) chunks,
// at least 100: the 100th, whose query words stand together, comes first,
// as the ranking in one statement (the bonus added to every chunk holding
// the terms, before the limit) puts it.
func TestProximityLiftsTheHundredthChunkFirst(t *testing.T) {
	for name, path := range map[string]string{"memory": MemoryPath, "file": filepath.Join(t.TempDir(), "chatpipe.db")} {
		t.Run(name, func(t *testing.T) {
			s := openFile(t, path)
			defer s.Close()
			const apart = "child alpha bravo charlie delta echo foxtrot golf hotel india process"
			limit := 3
			const chunks = 100
			for i := range chunks - 1 {
				addDoc(t, s, fmt.Sprintf("d%03d", i), fmt.Sprintf("%s k%03d", apart, i), nil)
			}
			// One word longer: its terms alone rank it last.
			addDoc(t, s, "near", "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo child process", nil)
			tenants := []string{knowledge.DefaultTenant}
			plain, err := s.KeywordSearchTerms(t.Context(), tenants, knowledge.QueryTerms("a child process"), maxLimit)
			if err != nil || len(plain) != chunks || plain[len(plain)-1].DocumentID != "near" {
				t.Fatalf("by its terms alone the chunk should rank last of %d; got %d hits, %v", chunks, len(plain), err)
			}
			hits, err := s.KeywordSearch(t.Context(), tenants, "a child process", limit)
			if err != nil {
				t.Fatal(err)
			}
			want := rankInOneStatement(t, s, "a child process", limit)
			if len(hits) != limit || hits[0].DocumentID != "near" || !reflect.DeepEqual(hits, want) {
				t.Fatalf("got %+v;\nwant near first, as in one statement: %+v", hits, want)
			}
		})
	}
}

// rankInOneStatement ranks query with its pairs' bonus added to every
// chunk holding its terms, in one statement, as the store did before the
// pairs were read beside the ranking (rankNear).
func rankInOneStatement(t *testing.T, s *Store, query string, limit int) []knowledge.Hit {
	t.Helper()
	rows, err := s.reader.QueryContext(t.Context(), `WITH p AS MATERIALIZED (SELECT rowid AS seq, `+bm25+` AS score FROM knowledge_fts WHERE knowledge_fts MATCH ?3)
	SELECT c.id, c.document_id, d.title, c.heading, c.page, c.content, c.idx, f.score
	FROM (SELECT knowledge_fts.rowid AS seq, `+bm25+` + `+fmt.Sprint(proximityWeight)+` * coalesce(p.score, 0) AS score
	      FROM knowledge_fts LEFT JOIN p ON p.seq = knowledge_fts.rowid WHERE knowledge_fts MATCH ?1
	      ORDER BY score LIMIT ?2) AS f
	JOIN knowledge_chunks c ON c.seq = f.seq
	JOIN knowledge_documents d ON d.id = c.document_id
	ORDER BY f.score, c.seq`,
		inColumns(textColumns, matchExpression(knowledge.QueryTerms(query))), limit,
		inColumns(textColumns, proximityExpression(knowledge.QueryProximities(query))))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var hits []knowledge.Hit
	for rows.Next() {
		var h knowledge.Hit
		if err := rows.Scan(&h.ChunkID, &h.DocumentID, &h.Title, &h.Heading, &h.Page, &h.Content, &h.ChunkIndex, &h.Score); err != nil {
			t.Fatal(err)
		}
		h.Score = -h.Score
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return hits
}

func TestProximityExpressionQuotesEveryTerm(t *testing.T) {
	for _, c := range []struct {
		pairs [][2]string
		want  string
	}{
		{nil, ""},
		{[][2]string{{"child", "process"}}, `NEAR("child" "process", 6)`},
		{[][2]string{{"a", "b"}, {`c"`, "d"}}, `NEAR("a" "b", 6) OR NEAR("c""" "d", 6)`},
	} {
		if got := proximityExpression(c.pairs); got != c.want {
			t.Errorf("proximityExpression(%q) = %s, want %s", c.pairs, got, c.want)
		}
	}
}
