package synonyms

import (
	"slices"
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

func TestReadRejectsAMalformedTable(t *testing.T) {
	if _, err := read([]byte("not gzip")); err == nil {
		t.Error("read(not gzip) succeeded")
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
