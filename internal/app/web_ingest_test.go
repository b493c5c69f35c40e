package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chatpipe/chatpipe/internal/docparse/docparsetest"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
)

// The page shows a progress bar per document ingested in the background,
// moves it as the server reports progress, and ends with the document
// ready (or the failure's reason).
func TestWebPageShowsIngestProgressUntilTheDocumentIsReady(t *testing.T) {
	b := newBrowser(t)
	emb := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 32})
	gate := make(chan struct{})
	emb.Hold(gate)
	released := false
	defer func() {
		if !released {
			close(gate)
		}
	}()
	h := newHarness(t, withEmbeddings(emb), withBackgroundIngest)

	dir := t.TempDir()
	big := filepath.Join(dir, "okapi.md")
	empty := filepath.Join(dir, "blank.txt")
	scan := filepath.Join(dir, "scan.pdf")
	if err := os.WriteFile(big, []byte(bigDocument("okapi")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte(strings.Repeat(" \n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(scan, docparsetest.ScannedPDF(t, 2), 0o600); err != nil {
		t.Fatal(err)
	}

	b.do("open the page", chromedp.Navigate(h.url("/")), chromedp.WaitVisible(chromedp.CSS("#upload-file")))
	b.do("upload a large file", chromedp.SetUploadFiles(chromedp.CSS("#upload-file"), []string{big}), chromedp.Click(chromedp.CSS("#upload-btn")))
	b.waitJS("the ingest under way", `document.querySelector('#upload-status').textContent.includes('Ingesting “okapi”') &&
		document.querySelector('#documents li[data-status="processing"] progress') !== null`)
	// Chunked and embedding (held): the bar has moved past reading.
	b.waitJS("the progress bar moving", `document.querySelector('#documents li[data-status="processing"] progress').value >= 0.4`)
	b.screenshot("web-ingest-progress.png")
	close(gate)
	released = true
	b.waitJS("the document ready", `document.querySelector('#upload-status').textContent.includes('Added “Field guide to the okapi”') &&
		document.querySelector('#documents progress') === null &&
		[...document.querySelectorAll('#documents li[data-status="ready"] .doc-title')].some(e => e.textContent === 'Field guide to the okapi')`)

	// A blank text is refused at once, whatever its size; a scan fails
	// once parsed, in the background.
	b.do("upload a blank file", chromedp.SetUploadFiles(chromedp.CSS("#upload-file"), []string{empty}), chromedp.Click(chromedp.CSS("#upload-btn")))
	b.waitJS("the refusal", `document.querySelector('#upload-status').textContent.includes('The document has no text.')`)
	b.do("upload a scan", chromedp.SetUploadFiles(chromedp.CSS("#upload-file"), []string{scan}), chromedp.Click(chromedp.CSS("#upload-btn")))
	b.waitJS("the failure and its reason", `document.querySelector('#upload-status').textContent.includes('failed: No extractable text (scanned PDF?)') &&
		[...document.querySelectorAll('#documents li[data-status="failed"] .doc-error')].some(e => e.textContent.includes('No extractable text'))`)
}
