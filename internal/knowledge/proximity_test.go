package knowledge_test

import (
	"slices"
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

func TestQueryProximitiesPairNeighbouringContentWords(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  [][2]string
	}{
		{"copy of the current process", [][2]string{{"copi", "current"}, {"current", "process"}}},
		{"fork", nil},
		{"the of", nil},
		{"child child process", [][2]string{{"child", "process"}}},
		{"process child process child", [][2]string{{"process", "child"}, {"child", "process"}}},
		{"创建 child 子进程 process", nil},
		{"gzip 压缩 the file size", [][2]string{{"file", "size"}}},
	} {
		if got := knowledge.QueryProximities(tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("QueryProximities(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
}
