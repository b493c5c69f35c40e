package terms

import (
	"reflect"
	"testing"
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
