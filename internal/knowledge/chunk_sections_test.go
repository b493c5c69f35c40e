package knowledge_test

import (
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/internal/docparse"
	"github.com/chatpipe/chatpipe/internal/knowledge"
)

func TestSectionsNeverSpanPagesAndKeepHeadings(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("The tide tables are posted at the harbour office every Monday. ", 30)
	chunks := knowledge.Chunker{TargetTokens: 60, OverlapTokens: 10}.Sections([]docparse.Section{
		{Page: 1, Text: "Short first page."},
		{Page: 2, Heading: "Tides", Text: long},
		{Page: 3, Text: "Third page text.\n\nA second paragraph."},
	})
	pages := map[int]int{}
	for i, c := range chunks {
		if c.Index != i || c.Tokens > 60 || c.Content == "" {
			t.Fatalf("chunk %d: %+v", i, c)
		}
		pages[c.Page]++
		if c.Page == 2 && c.Heading != "Tides" || c.Page != 2 && c.Heading != "" {
			t.Fatalf("chunk %d on page %d has heading %q", i, c.Page, c.Heading)
		}
		if c.Page != 2 && strings.Contains(c.Content, "tide") || c.Page == 2 && strings.Contains(c.Content, "page") {
			t.Fatalf("chunk %d on page %d holds another page's text: %q", i, c.Page, c.Content)
		}
	}
	if pages[1] != 1 || pages[2] < 3 || pages[3] != 1 {
		t.Fatalf("chunks per page %v", pages)
	}
}

func TestSectionsRepeatTheHeaderRowInEveryChunkOfASheet(t *testing.T) {
	t.Parallel()
	var rows []string
	for i := range 40 {
		rows = append(rows, strings.Repeat("x", i%5)+"row "+string(rune('A'+i%26))+" | value | more")
	}
	chunks := knowledge.Chunker{TargetTokens: 50, OverlapTokens: 10}.Sections([]docparse.Section{
		{Heading: "Sheet1", Header: "Name | Kind | Note", Text: strings.Join(rows, "\n")},
		{Heading: "Sheet2", Header: "A | B", Text: "1 | 2"},
	})
	seen := 0
	for _, c := range chunks {
		switch c.Heading {
		case "Sheet1":
			if !strings.HasPrefix(c.Content, "Name | Kind | Note\n") || c.Tokens > 50 {
				t.Fatalf("chunk without its header or too long: %+v", c)
			}
			seen += strings.Count(c.Content, "\n")
		case "Sheet2":
			if c.Content != "A | B\n1 | 2" {
				t.Fatalf("Sheet2 chunk %q", c.Content)
			}
		default:
			t.Fatalf("chunk under heading %q", c.Heading)
		}
	}
	if seen != len(rows) || len(chunks) < 4 {
		t.Fatalf("%d rows in %d chunks, want every one of %d rows once", seen, len(chunks), len(rows))
	}
}
