package knowledge_test

import (
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/retrieval"
)

// A command named in a Chinese question finds the page whose title and
// lead name it, ahead of a page that shares more of the question's
// Chinese words and mentions the command in passing; without the name
// score the other page comes first. (Six more pages make the name rare,
// as a command's name is in a knowledge base.)
func TestANameInAChineseQuestionFindsThePageItNames(t *testing.T) {
	const question = "tar 解包时怎么去掉最外层那个目录"
	for _, c := range []struct {
		weight float64
		first  string
	}{{0, "find"}, {2, "tar"}} {
		cfg := testConfig()
		cfg.Search.VectorWeight = 0
		cfg.Search.NameWeight = c.weight
		svc := newService(t, nil, cfg)
		ingest(t, svc, knowledge.IngestRequest{Title: "tar", Source: "tar.md",
			Content: "# tar\n\ntar - 档案文件管理程序\n\n把多个文件打成一个包，或者从包里取出文件。"})
		ingest(t, svc, knowledge.IngestRequest{Title: "find", Source: "find.md",
			Content: "# find\n\nfind - 在目录中搜索文件\n\n按名字、大小或时间查找文件；解包以后可以在最外层目录里逐层查找。打包请用 tar。"})
		for _, other := range []string{"ls - 列出目录内容", "cp - 复制文件和目录", "rm - 删除文件或目录", "mkdir - 创建目录", "du - 估算文件占用的空间", "ln - 在文件之间建立链接"} {
			name := strings.Fields(other)[0]
			ingest(t, svc, knowledge.IngestRequest{Title: name, Source: name + ".md", Content: "# " + name + "\n\n" + other})
		}
		got := titles(search(t, svc, retrieval.SearchRequest{Query: question, TopK: 5}).Hits)
		if len(got) == 0 || got[0] != c.first {
			t.Errorf("name_weight %g: %q found %v; want %s first", c.weight, question, got, c.first)
		}
	}
}
