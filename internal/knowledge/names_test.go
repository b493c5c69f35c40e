package knowledge

import (
	"slices"
	"strings"
	"testing"
)

func TestNameTermsAreTheLatinWordsOfAnUnspacedQuestion(t *testing.T) {
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"tar 解包时怎么去掉最外层那个目录", []string{"tar"}},
		{"GBK编码的文本文件转成UTF-8", []string{"gbk", "utf"}}, // not "8"
		{"grep 和 grep -r 有什么区别", []string{"grep"}},    // not the option's "r"
		{"解包时用 -C 指定目录", nil},
		{"权限写成644这种数字", nil},
		{"ファイルを tar で固める", []string{"tar"}},
		{"查看内核版本", nil},
		// a question mostly in English is ranked as one
		{"how do I unpack a tar file whose name is 文件.tar", nil},
		{"how do I unpack a tar file", nil},
		// words in other scripts written with spaces are no Latin names
		{"как 解包这个文件", nil},
		// a long question's characters do not push its last word out
		{strings.Repeat("文件目录", 20) + " rsync", []string{"rsync"}},
	} {
		if got := nameTerms(c.query); !slices.Equal(got, c.want) {
			t.Errorf("nameTerms(%q) = %q, want %q", c.query, got, c.want)
		}
	}
}
