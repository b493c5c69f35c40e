package app_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/docparse/docparsetest"
)

// BenchmarkUploadPDF200Pages is PDF ingest through the server: a 200-page
// text PDF (about 75 words a page) uploaded with a multipart POST, parsed,
// chunked and stored in SQLite (keyword index; no embeddings), then
// deleted. It reports pages/s and the server process's peak heap in use
// while ingesting (sampled every millisecond), besides B/op.
func BenchmarkUploadPDF200Pages(b *testing.B) {
	const pages = 200
	texts := make([]string, pages)
	for i := range texts {
		texts[i] = fmt.Sprintf("Page %d. ", i+1) + strings.Repeat("The harbour master logs every crossing, the tide and the weather at dawn. ", 6)
	}
	pdf := docparsetest.PDF(b, texts...)
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	fw, _ := w.CreateFormFile("file", "harbour-log.pdf")
	_, _ = fw.Write(pdf)
	_ = w.Close()
	cfg := benchConfig(b, "http://127.0.0.1:1")
	cfg.Knowledge.Ingest.BackgroundBytes = 1 << 40 // measure the parse, not the queue
	srv, _ := benchApp(b, cfg, http.DefaultClient)

	peak := sampleHeap()
	b.ReportAllocs()
	b.SetBytes(int64(len(pdf)))
	b.ResetTimer()
	for b.Loop() {
		resp, err := http.Post(srv.URL+"/api/v1/knowledge/documents", w.FormDataContentType(), bytes.NewReader(body.Bytes()))
		if err != nil {
			b.Fatal(err)
		}
		var doc struct{ ID string }
		_ = jsonDecode(resp, &doc)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("upload: %d", resp.StatusCode)
		}
		req, _ := http.NewRequest("DELETE", srv.URL+"/api/v1/knowledge/documents/"+doc.ID, nil)
		if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
			b.Fatalf("delete: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	b.StopTimer()
	b.ReportMetric(float64(pages*b.N)/b.Elapsed().Seconds(), "pages/s")
	b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MB")
}

// sampleHeap samples the heap in use until the returned function is
// called, which stops the sampler and returns the largest value seen.
func sampleHeap() func() uint64 {
	var (
		wg   sync.WaitGroup
		max  uint64
		done = make(chan struct{})
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > max {
				max = ms.HeapInuse
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return max
	}
}
