package knowledge

import (
	"slices"
	"testing"
)

func TestNameTermsAreTheLatinWordsOfAnUnspacedQuestion(t *testing.T) {
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"tar 解包时怎么去掉最外层那个目录", []string{"tar"}},
		{"GBK编码的文本文件转成UTF-8", []string{"gbk", "utf"}}, // not "8"
		{"grep 和 grep -r 有什么区别", []string{"grep", "r"}},
		{"权限写成644这种数字", nil},
		{"ファイルを tar で固める", []string{"tar"}},
		{"how do I unpack a tar file", nil}, // a spaced question: its lead score is another setting
		{"查看内核版本", nil},
	} {
		if got := nameTerms(c.query, QueryTerms(c.query)); !slices.Equal(got, c.want) {
			t.Errorf("nameTerms(%q) = %q, want %q", c.query, got, c.want)
		}
	}
}
