package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/docparse/docparsetest"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/knowledge/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// withEmbeddings points knowledge.embedding at srv.
func withEmbeddings(srv *knowledgetest.EmbeddingServer) func(*config.Config) {
	return func(c *config.Config) {
		c.Knowledge.Embedding = config.Embedding{Provider: "openai", BaseURL: srv.BaseURL(), Model: "hash-embed",
			APIKey: "sk-test", BatchSize: 2, Timeout: 30 * time.Second}
	}
}

// withBackgroundIngest sends every upload over 100 bytes to the
// background.
func withBackgroundIngest(c *config.Config) {
	c.Knowledge.Ingest.BackgroundBytes = 100
	c.Knowledge.Ingest.StaleAfter = time.Second
}

// bigDocument is a Markdown document of several chunks mentioning word.
func bigDocument(word string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Field guide to the %s\n\n", word)
	for i := range 12 {
		fmt.Fprintf(&b, "## Part %d\n\n", i+1)
		for range 30 {
			fmt.Fprintf(&b, "Observers of the %s note behaviour number %d in the wild. ", word, i)
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

// upload posts content as JSON and returns the status and the document
// (zero for an error answer: its "error" is an object, a document's a
// string).
func (h *harness) upload(title, content string, shared bool) (int, handler.DocumentJSON) {
	h.t.Helper()
	body, _ := json.Marshal(map[string]any{"title": title, "content": content, "shared": shared})
	resp := h.do(context.Background(), "POST", "/api/v1/knowledge/documents", string(body))
	defer resp.Body.Close()
	var d handler.DocumentJSON
	if resp.StatusCode < 300 {
		if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
			h.t.Fatalf("upload: %d: %v", resp.StatusCode, err)
		}
	}
	return resp.StatusCode, d
}

func (h *harness) document(id string) handler.DocumentJSON {
	h.t.Helper()
	var d handler.DocumentJSON
	if code := h.call("GET", "/api/v1/knowledge/documents/"+id, "", &d); code != http.StatusOK {
		h.t.Fatalf("GET document %s: %d", id, code)
	}
	return d
}

// documentTotal is the number of documents the default tenant lists.
func (h *harness) documentTotal() int {
	h.t.Helper()
	var list struct{ Total int }
	h.call("GET", "/api/v1/knowledge/documents", "", &list)
	return list.Total
}

// waitDocument polls the document until ok accepts it (a minute at most:
// a background ingest under -race on a busy two-CPU machine once took
// longer than 15 s to parse a page of a million path operators; the wait
// returns as soon as the document gets there).
func (h *harness) waitDocument(id string, ok func(handler.DocumentJSON) bool) handler.DocumentJSON {
	h.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		d := h.document(id)
		if ok(d) {
			return d
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("document %s never got there; last: %+v (progress %+v)", id, d, d.Progress)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hasStatus(s string) func(handler.DocumentJSON) bool {
	return func(d handler.DocumentJSON) bool { return d.Status == s }
}

func TestLargeUploadIsIngestedInTheBackgroundAndSearchableOnlyOnceReady(t *testing.T) {
	emb := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 32})
	h := newHarness(t, withEmbeddings(emb), withBackgroundIngest)

	// A small upload stays synchronous.
	if code, d := h.upload("Tiny", "# Tiny\n\nsmall note", false); code != http.StatusCreated || d.Status != "ready" {
		t.Fatalf("small upload: %d %+v", code, d)
	}
	gate := make(chan struct{})
	emb.Hold(gate)
	code, doc := h.upload("", bigDocument("okapi"), false)
	if code != http.StatusAccepted || doc.Status != "processing" || doc.ID == "" || doc.Progress == nil {
		close(gate)
		t.Fatalf("large upload: %d %+v; want 202 processing", code, doc)
	}
	// Chunked, waiting for its embeddings: not searchable yet.
	d := h.waitDocument(doc.ID, func(d handler.DocumentJSON) bool { return d.Progress != nil && d.Progress.ChunksTotal > 0 })
	if hits := h.search("okapi behaviour").Hits; len(hits) != 0 {
		close(gate)
		t.Fatalf("a processing document was found: %+v", hits)
	}
	var list struct {
		Documents []handler.DocumentJSON
	}
	h.call("GET", "/api/v1/knowledge/documents", "", &list)
	if len(list.Documents) != 2 || list.Documents[0].ID != doc.ID || list.Documents[0].Status != "processing" {
		t.Errorf("listing during processing: %+v", list.Documents)
	}
	total := d.Progress.ChunksTotal
	close(gate)

	// Progress moves: embedded chunks counted, then ready.
	ready := h.waitDocument(doc.ID, hasStatus("ready"))
	if ready.Progress != nil || ready.Error != "" || ready.Chunks != total || !ready.Embedded || ready.Title != "Field guide to the okapi" {
		t.Errorf("ready document = %+v; want %d embedded chunks and the heading as title", ready, total)
	}
	hits := h.search("okapi behaviour").Hits
	if len(hits) == 0 || hits[0].DocumentID != doc.ID {
		t.Fatalf("search after ready: %+v", hits)
	}
	// The same text again is known for a duplicate before it is queued.
	code, again := h.upload("", bigDocument("okapi"), false)
	if code != http.StatusOK || !again.Duplicate || again.ID != doc.ID {
		t.Errorf("second upload: %d %+v; want 200 and the first document", code, again)
	}
}

func TestBadBackgroundUploadsFailWithAReasonAndTheServerKeepsServing(t *testing.T) {
	h := newHarness(t, withBackgroundIngest)
	// What a text's own check finds is refused at once, whatever its
	// size, as a small one is: never accepted and then failed.
	for _, tc := range []struct{ name, content, code string }{
		{"whitespace", strings.Repeat(" \n", 200), "empty_document"},
		{"binary", strings.Repeat("ab\x00", 100), "binary_document"},
	} {
		var e handler.ErrorBody
		body, _ := json.Marshal(map[string]any{"title": tc.name, "content": tc.content})
		if code := h.call("POST", "/api/v1/knowledge/documents", string(body), &e); code != http.StatusBadRequest || e.Error.Code != tc.code {
			t.Errorf("%s: %d %+v; want 400 %s", tc.name, code, e.Error, tc.code)
		}
	}
	if total := h.documentTotal(); total != 0 {
		t.Fatalf("%d documents stored from refused uploads", total)
	}
	// What only the parse finds fails the document, with the reason.
	var d handler.DocumentJSON
	if code := h.uploadFile("scan.pdf", docparsetest.ScannedPDF(t, 2), &d); code != http.StatusAccepted {
		t.Fatalf("scanned PDF: %d %+v; want 202", code, d)
	}
	if failed := h.waitDocument(d.ID, hasStatus("failed")); !strings.Contains(failed.Error, "No extractable text") || failed.Chunks != 0 {
		t.Errorf("failed document = %+v; want the reason", failed)
	}
	if code, d := h.upload("fine", bigDocument("gecko"), false); code != http.StatusAccepted {
		t.Fatalf("good upload after bad ones: %d", code)
	} else {
		h.waitDocument(d.ID, hasStatus("ready"))
	}
}

// documentIDs lists the default tenant's documents' ids, newest first.
func (h *harness) documentIDs() []string {
	h.t.Helper()
	var list struct{ Documents []handler.DocumentJSON }
	if code := h.call("GET", "/api/v1/knowledge/documents?limit=100", "", &list); code != http.StatusOK {
		h.t.Fatalf("list documents: %d", code)
	}
	ids := make([]string, len(list.Documents))
	for i, d := range list.Documents {
		ids[i] = d.ID
	}
	return ids
}

// A file or text sent again after its ingest failed replaces the failed
// entry: the list holds one entry per file, not one more per attempt.
func TestAFileSentAgainReplacesItsFailedAttempt(t *testing.T) {
	h := newHarness(t, withBackgroundIngest)
	scan := docFixture(t, "scanned.pdf")
	var first, second handler.DocumentJSON
	if code := h.uploadFile("lease.pdf", scan, &first); code != http.StatusAccepted {
		t.Fatalf("scanned PDF: %d %+v", code, first)
	}
	if d := h.waitDocument(first.ID, hasStatus("failed")); !strings.Contains(d.Error, "scanned PDF?") {
		t.Fatalf("first attempt = %+v", d)
	}
	other := h.addDocument("Tide table", "High water at seven.")
	if code := h.uploadFile("lease.pdf", scan, &second); code != http.StatusAccepted || second.ID == first.ID {
		t.Fatalf("the same scan again: %d %+v", code, second)
	}
	h.waitDocument(second.ID, hasStatus("failed"))
	if ids := h.documentIDs(); !slices.Equal(ids, []string{second.ID, other.ID}) {
		t.Fatalf("documents after a second failed attempt = %v, want only the newest attempt %s and %s", ids, second.ID, other.ID)
	}
	if code := h.call("GET", "/api/v1/knowledge/documents/"+first.ID, "", nil); code != http.StatusNotFound {
		t.Errorf("GET the replaced attempt: %d, want 404", code)
	}

	// The file fixed (a text layer now) under the same name: ready, and the
	// failed attempt is gone.
	fixed := docparsetest.PDF(t, "The lease of the harbour office runs for five years.")
	var good handler.DocumentJSON
	if code := h.uploadFile("lease.pdf", fixed, &good); code != http.StatusAccepted {
		t.Fatalf("fixed PDF: %d %+v", code, good)
	}
	h.waitDocument(good.ID, hasStatus("ready"))
	if ids := h.documentIDs(); !slices.Equal(ids, []string{good.ID, other.ID}) {
		t.Fatalf("documents after the fixed file = %v, want %s and %s", ids, good.ID, other.ID)
	}

	// A text is known by its title. (A text's own check refuses a bad
	// one at once now, so its failed attempt is made in the store: what
	// an ingest that failed later, a store error say, leaves.)
	h.failedText("Field notes")
	code, notes := h.upload("Field notes", bigDocument("heron"), false)
	if code != http.StatusAccepted {
		t.Fatalf("the text again: %d", code)
	}
	h.waitDocument(notes.ID, hasStatus("ready"))
	if ids := h.documentIDs(); !slices.Equal(ids, []string{notes.ID, good.ID, other.ID}) {
		t.Fatalf("documents after the text sent again = %v", ids)
	}

	// An untitled text is no attempt at a titled one, whatever its heading.
	harbour := h.failedText("Harbour")
	code, untitled := h.upload("", "# Harbour\n\nTide at six.", false)
	if code != http.StatusCreated {
		t.Fatalf("small untitled text: %d", code)
	}
	if ids := h.documentIDs(); !slices.Equal(ids, []string{untitled.ID, harbour, notes.ID, good.ID, other.ID}) {
		t.Fatalf("documents after an untitled text headed like a failed one = %v; the failed one must stay", ids)
	}
}

// failedText adds to the server's store a text upload of title whose
// ingest failed, as the default tenant's, and returns its id.
func (h *harness) failedText(title string) string {
	h.t.Helper()
	s, err := sqlitestore.Open(context.Background(), h.app.Config().Storage.SQLite.Path)
	if err != nil {
		h.t.Fatal(err)
	}
	defer s.Close()
	id := fmt.Sprintf("failed-%d", time.Now().UnixNano())
	begun, err := s.BeginDocument(context.Background(), knowledge.Document{ID: id, TenantID: knowledge.DefaultTenant, Title: title,
		MediaType: knowledge.MediaMarkdown}, []byte("# "+title))
	if err != nil {
		h.t.Fatal(err)
	}
	if err := s.FailDocument(context.Background(), id, begun.Claim, "Storing the document failed.", ""); err != nil {
		h.t.Fatal(err)
	}
	return id
}

func TestAFullIngestQueueRefusesUploadsWith503(t *testing.T) {
	emb := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 32})
	gate := make(chan struct{})
	emb.Hold(gate)
	h := newHarness(t, withEmbeddings(emb), withBackgroundIngest, func(c *config.Config) {
		c.Knowledge.Ingest.Workers, c.Knowledge.Ingest.Queue = 1, 1
	})
	released := false
	defer func() {
		if !released {
			close(gate)
		}
	}()
	var ids []string
	for _, word := range []string{"ibis", "heron"} {
		code, d := h.upload("", bigDocument(word), false)
		if code != http.StatusAccepted {
			t.Fatalf("upload %s: %d", word, code)
		}
		ids = append(ids, d.ID)
	}
	resp := h.do(context.Background(), "POST", "/api/v1/knowledge/documents",
		`{"content":`+mustJSON(bigDocument("stork"))+`}`)
	var e handler.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || e.Error.Code != "ingest_busy" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third upload: %d %+v; want 503 ingest_busy with Retry-After", resp.StatusCode, e)
	}
	// Answers are not held up by the ingest.
	if code := h.call("GET", "/api/v1/sessions", "", nil); code != http.StatusOK {
		t.Fatalf("sessions while ingesting: %d", code)
	}
	close(gate)
	released = true
	for _, id := range ids {
		h.waitDocument(id, hasStatus("ready"))
	}
	if code, _ := h.upload("", bigDocument("stork"), false); code != http.StatusAccepted {
		t.Errorf("upload once the queue drained: %d", code)
	}
}

func listenLocal() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// helperServerEnv names the database a re-executed test binary serves
// (TestHelperServerProcess), and helperEmbeddingsEnv its embeddings URL.
const (
	helperServerEnv     = "CHATPIPE_TEST_HELPER_SERVER_DB"
	helperEmbeddingsEnv = "CHATPIPE_TEST_HELPER_EMBEDDINGS"
)

// serveIngestChildIfAsked turns this test binary into the server that
// TestServerKilledMidIngestResumesTheDocument starts in a process of its
// own and kills with SIGKILL; TestMain calls it first. It returns at once
// when the binary is not that child.
func serveIngestChildIfAsked() {
	dbPath := os.Getenv(helperServerEnv)
	if dbPath == "" {
		return
	}
	cfg := config.Default()
	cfg.Storage.SQLite.Path = dbPath
	cfg.Knowledge.Embedding = config.Embedding{Provider: "openai", BaseURL: os.Getenv(helperEmbeddingsEnv), Model: "hash-embed",
		APIKey: "sk-test", BatchSize: 2, Timeout: time.Minute}
	withBackgroundIngest(cfg)
	a, err := app.New(context.Background(), cfg, app.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest child:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: a.Handler()}
	ln, err := listenLocal()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest child:", err)
		os.Exit(1)
	}
	fmt.Printf("LISTEN http://%s\n", ln.Addr())
	_ = srv.Serve(ln) // until killed
	os.Exit(0)
}

func TestServerKilledMidIngestResumesTheDocument(t *testing.T) {
	emb := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 32})
	gate := make(chan struct{})
	emb.Hold(gate)
	dbPath := filepath.Join(t.TempDir(), "chatpipe.db")

	cmd := exec.Command(os.Args[0], "-test.run=^$") // serveIngestChildIfAsked, from TestMain
	cmd.Env = append(os.Environ(), helperServerEnv+"="+dbPath, helperEmbeddingsEnv+"="+emb.BaseURL())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := bufio.NewScanner(stdout)
	base := ""
	for lines.Scan() {
		if u, ok := strings.CutPrefix(lines.Text(), "LISTEN "); ok {
			base = u
			break
		}
	}
	if base == "" {
		t.Fatal("the child server never said where it listens")
	}
	go func() { // keep the pipe drained until the child dies
		for lines.Scan() {
		}
	}()

	child := &harness{t: t, client: &http.Client{Transport: &http.Transport{}}, base: base}
	code, doc := child.upload("", bigDocument("pangolin"), false)
	if code != http.StatusAccepted {
		t.Fatalf("upload to the child: %d", code)
	}
	child.waitDocument(doc.ID, func(d handler.DocumentJSON) bool { return d.Progress != nil && d.Progress.ChunksTotal > 0 })

	// kill -9 in the middle of embedding: no Close, no release.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	close(gate)

	provider := providertest.New(t)
	cfg := baseConfig(t, provider)
	cfg.Storage.SQLite.Path = dbPath
	withEmbeddings(emb)(cfg)
	withBackgroundIngest(cfg)
	h := startHarness(t, provider, cfg, "")
	if d := h.document(doc.ID); d.Status != "processing" {
		t.Fatalf("after the kill the document is %q, want still processing (then resumed)", d.Status)
	}
	ready := h.waitDocument(doc.ID, func(d handler.DocumentJSON) bool { return d.Status != "processing" })
	if ready.Status != "ready" || !ready.Embedded {
		t.Fatalf("resumed document = %+v; want ready and embedded", ready)
	}
	if hits := h.search("pangolin").Hits; len(hits) == 0 || hits[0].DocumentID != doc.ID {
		t.Fatalf("search after the resumed ingest: %+v", hits)
	}
}

// A server stopped cleanly mid-ingest (a restart, a rolling deploy) gives
// the attempt back: four restarts in a row leave an accepted upload
// processing, then ready, where max_attempts (3) would have failed it
// and dropped its file.
func TestCleanRestartsMidIngestDoNotUseUpTheAttempts(t *testing.T) {
	emb := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 32})
	gate := make(chan struct{})
	emb.Hold(gate)
	provider := providertest.New(t)
	cfg := baseConfig(t, provider)
	withEmbeddings(emb)(cfg)
	withBackgroundIngest(cfg)
	cfg.Knowledge.Ingest.MaxAttempts = 3
	id := ""
	for run := range 5 {
		t.Run(fmt.Sprintf("run %d", run), func(t *testing.T) {
			h := startHarness(t, provider, cfg, "") // closed, cleanly, when the run ends
			if run == 0 {
				code, doc := h.upload("", bigDocument("axolotl"), false)
				if code != http.StatusAccepted {
					t.Fatalf("upload: %d", code)
				}
				id = doc.ID
			}
			// Resumed at once, waiting on its embeddings again.
			d := h.waitDocument(id, func(d handler.DocumentJSON) bool {
				return d.Status != "processing" || d.Progress != nil && d.Progress.ChunksTotal > 0
			})
			if d.Status != "processing" {
				t.Fatalf("after %d clean restarts the document is %+v; want it processing", run, d)
			}
			if run == 4 {
				close(gate)
				if ready := h.waitDocument(id, hasStatus("ready")); !ready.Embedded {
					t.Fatalf("ready document = %+v", ready)
				}
			}
		})
	}
}

// The same large text sent again while the first copy is still being
// ingested is answered as a duplicate of it at once (200, the processing
// document), not accepted and then failed: no failed entry is left.
func TestTheSameTextSentAgainWhileProcessingIsADuplicate(t *testing.T) {
	emb := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 32})
	h := newHarness(t, withEmbeddings(emb), withBackgroundIngest)
	gate := make(chan struct{})
	emb.Hold(gate)
	text := bigDocument("serval")
	code, first := h.upload("", text, false)
	if code != http.StatusAccepted {
		close(gate)
		t.Fatalf("first upload: %d", code)
	}
	for range 2 {
		code, again := h.upload("", text, false)
		if code != http.StatusOK || !again.Duplicate || again.ID != first.ID {
			close(gate)
			t.Fatalf("the same text again: %d %+v; want 200, a duplicate of %s", code, again, first.ID)
		}
	}
	close(gate)
	h.waitDocument(first.ID, hasStatus("ready"))
	if total := h.documentTotal(); total != 1 {
		t.Errorf("%d documents listed, want the one (no failed entries)", total)
	}
}
