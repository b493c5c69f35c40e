package citation

import (
	"reflect"
	"strings"
	"testing"
)

func TestFormatContextWritesNumberedBlocks(t *testing.T) {
	t.Parallel()
	got := FormatContext([]Passage{
		{Index: 1, Title: "Running chatpipe", Heading: "Quick start", Content: "Run go run .\n\nIt listens on :8080."},
		{Index: 2, Title: "Resuming", Content: "Reconnect with Last-Event-ID."},
		{Index: 3, Content: "No title."},
		{Index: 4, Title: "Guide", Heading: "Guide > Setup > Docker", Content: "Use the image."},
	})
	want := "[1] Running chatpipe — Quick start\nRun go run .\nIt listens on :8080.\n\n" +
		"[2] Resuming\nReconnect with Last-Event-ID.\n\n" +
		"[3] Untitled\nNo title.\n\n" +
		"[4] Guide — Setup > Docker\nUse the image."
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if FormatContext(nil) != NoPassages {
		t.Fatalf("no passages should give NoPassages")
	}
}

func TestParseContextReadsBackWhatFormatContextWrote(t *testing.T) {
	t.Parallel()
	passages := []Passage{
		{Index: 1, Title: "Running chatpipe", Heading: "Quick start", Content: "Run go run .\nIt listens on :8080."},
		{Index: 2, Title: "流的恢复", Content: "使用 Last-Event-ID 重新连接。\n[3] is not a header inside content"},
		{Index: 3, Title: "Plugins", Content: "A plugin implements OnEvent."},
	}
	prompt := "Answer with citations.\n\nContext:\n" + FormatContext(passages) + "\n\nQuestion: how do I run it?"
	got, rest := ParseContext(prompt)
	if !reflect.DeepEqual(got, passages) {
		t.Fatalf("parsed\n%#v\nwant\n%#v", got, passages)
	}
	if !strings.Contains(rest, "Answer with citations.") || !strings.HasSuffix(rest, "Question: how do I run it?") ||
		strings.Contains(rest, "Last-Event-ID") {
		t.Fatalf("rest = %q", rest)
	}
}

func TestParseContextNeedsBlocksNumberedFromOneAndSeparatedByBlankLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want int
	}{
		{"plain question", 0},
		{"[2] starts at two\ncontent", 0},
		{"Context:\n[1] one\ncontent", 1},
		{"[1] one\ncontent\n[2] not after a blank line", 1},
		{"[1] one\ncontent\n\n[3] skips two\ncontent", 1},
		{"[1] one\ncontent\n\n[2] two\ncontent", 2},
	} {
		if got, _ := ParseContext(tc.text); len(got) != tc.want {
			t.Errorf("ParseContext(%q) found %d passages, want %d", tc.text, len(got), tc.want)
		}
	}
}
