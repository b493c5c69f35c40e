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

func TestParseGroupsReadsCommaSeparatedGroups(t *testing.T) {
	got, err := ParseGroups("# a comment\n\n  Invoice , bill,  Sales   Receipt \n删除, 移除\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Group{{Line: 3, Words: []string{"invoice", "bill", "sales receipt"}}, {Line: 4, Words: []string{"删除", "移除"}}}
	if !slices.EqualFunc(got, want, func(a, b Group) bool { return a.Line == b.Line && slices.Equal(a.Words, b.Words) }) {
		t.Fatalf("ParseGroups = %+v, want %+v", got, want)
	}
}

func TestParseGroupsTakesABOMAndChineseCommas(t *testing.T) {
	got, err := ParseGroups("\ufeff# saved by Notepad\r\n工单，服务请求、请求单\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !slices.Equal(got[0].Words, []string{"工单", "服务请求", "请求单"}) {
		t.Fatalf("ParseGroups = %+v", got)
	}
}

func TestParseGroupsRefusesMalformedLinesNamingThem(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"a, b\ninvoice\n", "line 2: a group needs at least two words"},
		{"invoice,, bill", "line 1: an empty word"},
		{"invoice, bill,", "line 1: an empty word"},
		{"invoice, Bill, bill", `line 1: "bill" listed twice`},
		{strings.Repeat("w, ", 12) + "w13", "listed twice"},
		{"a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13", "line 1: 13 words; a group may have at most 12"},
	} {
		if _, err := ParseGroups(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseGroups(%q) = %v, want an error containing %q", c.text, err, c.want)
		}
	}
}

func TestTheBuiltinGroupsParse(t *testing.T) {
	groups := Builtin()
	if len(groups) < 100 {
		t.Fatalf("%d built-in groups, want at least 100", len(groups))
	}
	var english, chinese bool
	for _, g := range groups {
		for _, w := range g.Words {
			english = english || w == "delete"
			chinese = chinese || w == "删除"
		}
	}
	if !english || !chinese {
		t.Error("the built-in groups should hold English (delete) and Chinese (删除) words")
	}
}
