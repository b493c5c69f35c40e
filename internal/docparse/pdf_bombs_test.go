package docparse_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chatpipe/chatpipe/internal/docparse"
	"github.com/chatpipe/chatpipe/internal/docparse/docparsetest"
)

// Small files that would make the parse run for ever, or for minutes, or
// ingest a million pages: each ends at once with an error.
func TestPDFsThatWouldParseForeverAreRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		what string
		data []byte
		opts docparse.Options
		want error
	}{
		// The reader followed /Prev with no memory: a hung request, a
		// worker held for good, resumed after every restart.
		{"a cross-reference section naming itself as the one before", docparsetest.LoopingXrefPDF("looping lighthouse"), docparse.Options{}, docparse.ErrCorrupt},
		// 10^9 runs of a form, 3 KB, none showing a character: each
		// run cost one operator of the budget.
		{"forms drawing each other ten times, nine deep", docparsetest.FormFanOutPDF(9, 10), docparse.Options{MaxTextBytes: 64 << 10}, docparse.ErrTextLimit},
		// One page listed 22,500 times.
		{"a page list naming one page over and over", docparsetest.RepeatedPagesPDF("repeated lighthouse", 150), docparse.Options{}, docparse.ErrTooLarge},
	} {
		_, err := docparse.Parse(context.Background(), "bomb.pdf", c.data, c.opts)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v; want %v", c.what, err, c.want)
		}
	}
	// Forms drawn a few times each, and a few pages listed once, are read.
	doc, err := docparse.Parse(context.Background(), "fine.pdf", docparsetest.FormFanOutPDF(3, 3), docparse.Options{})
	if err != nil || !strings.Contains(doc.Text(), "The page's own text.") || !strings.Contains(doc.Text(), "deep") {
		t.Errorf("forms 3 deep, 3 each: %v, %q", err, doc.Text())
	}
	doc, err = docparse.Parse(context.Background(), "fine.pdf", docparsetest.RepeatedPagesPDF("repeated lighthouse", 3), docparse.Options{})
	if err != nil || doc.Pages != 9 {
		t.Errorf("a page listed 9 times: %v, %+v", err, doc)
	}
}

// A CSV row of more than a megabyte (one endless line) is refused: cut
// into passages at once, it took gigabytes.
func TestACSVRowOfMoreThanAMegabyteIsRefused(t *testing.T) {
	t.Parallel()
	data := "name,notes\nokapi," + strings.Repeat("striped legs and a long tongue ", (1<<20)/30+1) + "\n"
	_, err := docparse.Parse(context.Background(), "animals.csv", []byte(data), docparse.Options{})
	if !errors.Is(err, docparse.ErrTooLarge) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v; want ErrTooLarge naming line 2", err)
	}
}

// endingContext is a context whose first look finds it live and every
// later one ended: a request given up on, or a document deleted, once
// its parse has begun.
type endingContext struct {
	context.Context
	looks atomic.Int32
}

func (c *endingContext) Err() error {
	if c.looks.Add(1) > 1 {
		return context.Canceled
	}
	return nil
}

// A parse stops within a page once its context ends: forms drawing each
// other over and over would otherwise run to the budget's end.
func TestAPDFParseStopsWithinAPageWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	ctx := &endingContext{Context: context.Background()}
	_, err := docparse.Parse(ctx, "bomb.pdf", docparsetest.FormFanOutPDF(9, 10), docparse.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want context.Canceled", err)
	}
}
