package sqlitestore

import (
	"path/filepath"
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
