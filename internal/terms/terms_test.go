package terms

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
)

func TestEachCutsWordsAndCJKBigrams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"How do I resume a Stream?", []string{"resume", "stream"}},
		{"Last-Event-ID header, v2", []string{"last", "event", "id", "header", "v2"}},
		{"如何恢复流", []string{"恢复", "复流"}},
		{"用 Last-Event-ID 重新连接", []string{"用", "last", "event", "id", "重新", "新连", "连接"}},
		{"流的恢复", []string{"恢复"}},
		{"", nil},
	} {
		var got []string
		Each(tc.in, func(s string) { got = append(got, s) })
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Each(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestJaccard(t *testing.T) {
	t.Parallel()
	a, b := NewSet("resume a stream with Last-Event-ID"), NewSet("resume the stream")
	if got := Jaccard(a, b); got != 2.0/5 {
		t.Errorf("Jaccard = %v, want 0.4", got)
	}
	if Jaccard(a, a) != 1 || Jaccard(Set{}, Set{}) != 0 {
		t.Error("Jaccard of equal sets must be 1 and of empty sets 0")
	}
}

// isCJK's shortcut answers no below firstCJK: every code point there is
// outside the scripts it looks for, and firstCJK itself is inside.
func TestIsCJKShortcutSkipsNoCJKCharacter(t *testing.T) {
	t.Parallel()
	in := func(r rune) bool {
		return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
	}
	for r := rune(0); r < firstCJK; r++ {
		if in(r) {
			t.Fatalf("U+%04X is CJK but below firstCJK", r)
		}
	}
	if !in(firstCJK) || !isCJK(firstCJK) {
		t.Fatalf("U+%04X should be CJK", firstCJK)
	}
}

// A rerank candidate's term set (rerank's diversity step builds one per
// candidate): a 300-word English passage, and a Chinese one.
func BenchmarkNewSet(b *testing.B) {
	en := strings.Repeat("The child process is a copy of the calling process, created by fork; it inherits open file descriptors. ", 20)
	zh := strings.Repeat("子进程是调用进程的副本，由 fork 创建，并继承打开的文件描述符。", 20)
	for _, c := range []struct{ name, text string }{{"english", en}, {"chinese", zh}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				NewSet(c.text)
			}
		})
	}
}
