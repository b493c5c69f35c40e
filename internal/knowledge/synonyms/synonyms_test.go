package synonyms

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"go.uber.org/goleak"
)

func TestTheEmbeddedTableRelatesWordsSharingAGloss(t *testing.T) {
	if got := Related("修改"); !slices.Contains(got, "变更") {
		t.Errorf("Related(修改) = %v, want 变更 among them (both 'to alter' in CC-CEDICT)", got)
	}
	if got := Related("不是一个词"); got != nil {
		t.Errorf("Related(not a word) = %v, want nil", got)
	}
	if len(chineseTable) >= 1<<20 {
		t.Errorf("the embedded table is %d bytes; keep it under 1 MB", len(chineseTable))
	}
	m := load()
	if len(m) < 10000 {
		t.Fatalf("%d words in the table, want tens of thousands", len(m))
	}
	for word := range m {
		if n := utf8.RuneCountInString(word); n < 2 || n > MaxWordRunes {
			t.Fatalf("key %q has %d characters, want 2 to %d", word, n, MaxWordRunes)
		}
		for _, r := range word {
			if !unicode.Is(unicode.Han, r) {
				t.Fatalf("key %q is not all Han characters", word)
			}
		}
		if rel := Related(word); len(rel) == 0 || slices.Contains(rel, word) {
			t.Fatalf("Related(%q) = %v, want other words", word, rel)
		}
	}
}

func TestTheEnglishTableGivesTheMainGlossesWords(t *testing.T) {
	got := English("修改")
	for _, want := range []string{"alter", "modify"} {
		if !slices.Contains(got, want) {
			t.Errorf("English(修改) = %v, want %q among them (CC-CEDICT: to amend, to alter, to modify)", got, want)
		}
	}
	if got := English("不是一个词"); got != nil {
		t.Errorf("English(not a word) = %v, want nil", got)
	}
	if len(englishTable) >= 1<<20 {
		t.Errorf("the embedded English table is %d bytes; keep it under 1 MB", len(englishTable))
	}
	m := loadEnglish()
	if len(m) < 10000 {
		t.Fatalf("%d words in the English table, want tens of thousands", len(m))
	}
	for word, line := range m {
		if n := utf8.RuneCountInString(word); n < 2 || n > MaxWordRunes {
			t.Fatalf("key %q has %d characters, want 2 to %d", word, n, MaxWordRunes)
		}
		for _, w := range strings.Fields(line) {
			if strings.ContainsFunc(w, func(r rune) bool { return (r < 'a' || r > 'z') && r != '-' }) {
				t.Fatalf("English(%q) holds %q, want lower-case English words", word, w)
			}
		}
	}
}

func TestReadRejectsAMalformedTable(t *testing.T) {
	if _, err := read([]byte("not gzip")); err == nil {
		t.Error("read(not gzip) succeeded")
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
