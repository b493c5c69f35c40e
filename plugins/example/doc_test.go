package example_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestGuideQuotesTheCode keeps docs/plugins.md honest: a code block after
// <!-- file: path --> is that file byte for byte, one after
// <!-- quote: path --> appears in that file as it is, and the worked
// example is quoted whole.
func TestGuideQuotesTheCode(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "plugins.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)<!-- (file|quote): (\\S+) -->\n```go\n(.*?)```\n").FindAllSubmatch(doc, -1)
	files := map[string]bool{}
	for _, b := range blocks {
		kind, path, code := string(b[1]), string(b[2]), b[3]
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
		if err != nil {
			t.Errorf("docs/plugins.md quotes %s: %v", path, err)
			continue
		}
		switch {
		case kind == "file" && !bytes.Equal(src, code):
			t.Errorf("docs/plugins.md's copy of %s differs from the file; paste the file again", path)
		case kind == "quote" && !bytes.Contains(src, code):
			t.Errorf("docs/plugins.md quotes from %s what the file no longer says:\n%s", path, code)
		}
		files[kind+":"+path] = true
	}
	for _, want := range []string{"file:plugins/example/footer.go", "file:plugins/example/footer_test.go",
		"quote:plugins/example/faq.go", "quote:pipeline/plugin.go"} {
		if !files[want] {
			t.Errorf("docs/plugins.md no longer quotes %s", want)
		}
	}
}
