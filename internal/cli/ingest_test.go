package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/cli"
	"github.com/chatpipe/chatpipe/internal/docparse/docparsetest"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/retrieval"
)

// writeTree creates files (path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// storeConfig writes a config.yaml in a new folder naming a SQLite file
// there, without the sample documents, and knowledge settings more (each
// "  key: value\n"); it returns the folder and both paths.
func storeConfig(t *testing.T, knowledge string) (root, dbPath, cfgPath string) {
	t.Helper()
	root = t.TempDir()
	dbPath = filepath.Join(root, "chatpipe.db")
	cfgPath = filepath.Join(root, "config.yaml")
	writeTree(t, root, map[string]string{"config.yaml": "storage:\n  sqlite:\n    path: " + dbPath +
		"\nknowledge:\n  sample_docs: false\n" + knowledge})
	return root, dbPath, cfgPath
}

// openKnowledge opens the knowledge base the configuration at cfgPath
// names, as the server would; the test closes it.
func openKnowledge(t *testing.T, cfgPath string) *knowledge.Service {
	t.Helper()
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := app.OpenKnowledge(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// runIngest runs `chatpipe ingest args...` and returns its exit code and
// output.
func runIngest(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd, ok := cli.Lookup("ingest")
	if !ok {
		t.Fatal("the ingest command is not registered")
	}
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), cmd, args, &out, &errOut)
	return code, out.String() + errOut.String()
}

const alpha = "# Alpha guide\n\nThe alpaca eats grass on the high plains."

func sampleFolder(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "docs")
	writeTree(t, dir, map[string]string{
		"a.md":              alpha,
		"copy-of-a.md":      alpha,
		"sub/b.txt":         "Bison roam the northern prairie in herds.",
		"sub/deeper/c.html": "<html><head><title>Condor notes</title></head><body><p>The condor soars over canyons.</p></body></html>",
		"empty.txt":         "  \n",
		"image.png":         "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
		"big.md":            "# Big\n\n" + strings.Repeat("too many words here ", 300),
		".hidden/secret.md": "# Secret\n\nnever ingested",
	})
	return dir
}

func TestIngestAFolderThroughTheStoreReportsEveryFile(t *testing.T) {
	_, _, cfgPath := storeConfig(t, "  max_upload_bytes: 4096\n")
	dir := sampleFolder(t)
	// A large file of a type no upload takes is refused for its type,
	// unread (not as a text over max_upload_bytes).
	if err := os.WriteFile(filepath.Join(dir, "movie.mp4"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "movie.mp4"), 30<<20); err != nil {
		t.Fatal(err)
	}

	code, out := runIngest(t, "-config", cfgPath, dir)
	if code != 1 {
		t.Errorf("exit code %d, want 1 (files were refused)\n%s", code, out)
	}
	for _, want := range []string{
		"3 ingested, 1 skipped as duplicates, 4 refused",
		"refused    " + filepath.Join(dir, "movie.mp4") + ": Unsupported document type: .mp4 files are not read",
		"ingested   " + filepath.Join(dir, "a.md"),
		"duplicate  " + filepath.Join(dir, "copy-of-a.md") + ` (same content as "Alpha guide"`,
		"ingested   " + filepath.Join(dir, "sub", "deeper", "c.html"),
		"refused    " + filepath.Join(dir, "empty.txt") + ": The document has no text.",
		"refused    " + filepath.Join(dir, "image.png") + ":",
		"refused    " + filepath.Join(dir, "big.md") + ": The file is larger than the limit of 4096 bytes (knowledge.max_upload_bytes): 6007 bytes.",
		"chatpipe ingest: 4 of 8 files refused",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret") {
		t.Errorf("a hidden folder was ingested:\n%s", out)
	}
	if strings.Contains(out, "\r") || strings.Contains(out, "\033[") {
		t.Errorf("progress bars drawn on a non-terminal:\n%q", out)
	}

	// What the server would see, from the same file.
	svc := openKnowledge(t, cfgPath)
	docs, total, err := svc.Documents(context.Background(), knowledge.DefaultTenant, 10, 0)
	if err != nil || total != 3 {
		t.Fatalf("documents = %+v, %d, %v; want 3", docs, total, err)
	}
	res, err := svc.Search(context.Background(), retrieval.SearchRequest{Query: "condor canyons"})
	if err != nil || len(res.Hits) == 0 || res.Hits[0].Title != "Condor notes" {
		t.Errorf("search = %+v, %v", res.Hits, err)
	}

	// Again, one good file only: a duplicate, and nothing refused.
	if code, out := runIngest(t, "-config", cfgPath, filepath.Join(dir, "sub", "b.txt")); code != 0 ||
		!strings.Contains(out, "0 ingested, 1 skipped as duplicates, 0 refused") {
		t.Errorf("second run: exit %d\n%s", code, out)
	}
	if code, out := runIngest(t, "-config", cfgPath, filepath.Join(dir, "missing.md")); code != 1 ||
		!strings.Contains(out, "no such file or directory") {
		t.Errorf("a missing path: exit %d\n%s", code, out)
	}
}

// Without -server, the command shares the SQLite file with a running
// server: a write of the other side that takes longer than a few seconds
// (a big document) is waited for, not reported as a refusal.
func TestIngestThroughTheStoreWaitsForAnotherWriter(t *testing.T) {
	_, dbPath, cfgPath := storeConfig(t, "")
	dir := sampleFolder(t)
	if code, out := runIngest(t, "-config", cfgPath, filepath.Join(dir, "a.md")); code != 0 {
		t.Fatalf("first: exit %d\n%s", code, out)
	}

	other, err := sql.Open("sqlite", dbPath+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin() // holds the write lock, as another process's long write does
	if err != nil {
		t.Fatal(err)
	}
	const hold = 6 * time.Second // longer than the 5 s the store used to wait
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(hold)
		_ = tx.Rollback()
	}()
	start := time.Now()
	code, out := runIngest(t, "-config", cfgPath, filepath.Join(dir, "sub", "b.txt"))
	<-released
	if code != 0 || !strings.Contains(out, "1 ingested, 0 skipped as duplicates, 0 refused") {
		t.Errorf("while another connection wrote: exit %d\n%s", code, out)
	}
	if waited := time.Since(start); waited < hold {
		t.Errorf("ingested after %v, before the other write ended (%v)", waited, hold)
	}
}

// Without -server, files are read as an upload of them is: a PDF by
// pages, a DOCX by headings, a CSV as rows under its header; a type no
// upload takes is refused as such.
func TestIngestThroughTheStoreReadsDocumentsAsAnUploadDoes(t *testing.T) {
	root, _, cfgPath := storeConfig(t, "  max_upload_bytes: 4096\n")
	dir := filepath.Join(root, "docs")
	manual := docparsetest.PDF(t, "Unpacking the crate.", "Charging the battery.", "The gyroscope needs calibration every spring.")
	writeTree(t, dir, map[string]string{
		"manual.pdf":      string(manual),
		"copy/manual.pdf": string(manual),
		"guide.docx":      string(docparsetest.DOCX(t, "Install guide", docparsetest.Para{Level: 1, Text: "Mounting the flux bracket"}, docparsetest.Para{Text: "Tighten the quokka bolts by hand."})),
		"people.csv":      "Name,City,Fruit\nAda,Lisbon,quince\nBo,Oslo,medlar\n",
		"tool.exe":        "MZ\x90\x00",
		"broken.pdf":      "%PDF-1.7 cut short",
	})

	code, out := runIngest(t, "-config", cfgPath, dir)
	for _, want := range []string{
		"3 ingested, 1 skipped as duplicates, 2 refused",
		"refused    " + filepath.Join(dir, "tool.exe") + ": Unsupported document type: .exe files are not read",
		"refused    " + filepath.Join(dir, "broken.pdf") + ": ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("exit code %d, want 1\n%s", code, out)
	}

	svc := openKnowledge(t, cfgPath)
	search := func(q string) retrieval.SearchHit {
		t.Helper()
		res, err := svc.Search(context.Background(), retrieval.SearchRequest{Query: q})
		if err != nil || len(res.Hits) == 0 {
			t.Fatalf("search %q = %+v, %v", q, res.Hits, err)
		}
		return res.Hits[0]
	}
	if h := search("gyroscope calibration"); h.Page != 3 {
		t.Errorf("the PDF's page 3: %+v", h)
	}
	if h := search("quokka bolts"); h.Heading != "Mounting the flux bracket" || h.Title != "Install guide" {
		t.Errorf("the DOCX's heading: %+v", h)
	}
	if h := search("medlar"); !strings.Contains(h.Content, "Name | City | Fruit") {
		t.Errorf("the CSV row lacks its header: %+v", h)
	}
}

func TestIngestWithoutPathsIsAUsageError(t *testing.T) {
	code, out := runIngest(t)
	if code != 2 || !strings.Contains(out, "usage: chatpipe ingest") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func TestIngestThroughTheServerFollowsBackgroundIngestsAndSharesDocuments(t *testing.T) {
	const acmeKey, betaKey = "acme-0123456789abcdef", "beta-0123456789abcdef"
	cfg := config.Default()
	cfg.Storage.SQLite.Path = filepath.Join(t.TempDir(), "chatpipe.db")
	cfg.Knowledge.MaxUploadBytes = 4096
	cfg.Knowledge.Ingest.BackgroundBytes = 50 // a.md and b.txt go to the background
	cfg.Auth.Keys = []config.AuthKey{{Tenant: "acme", Key: acmeKey, ManageShared: true}, {Tenant: "beta", Key: betaKey}}
	a, err := app.New(context.Background(), cfg, app.Options{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	defer func() {
		srv.Close()
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	}()
	dir := sampleFolder(t)

	// A wrong key stops the run at the first file: each further attempt
	// would count against the address's failed-key limit.
	code, out := runIngest(t, "-server", srv.URL, "-key", "wrong-0123456789abcdef", dir)
	if code != 1 || !strings.Contains(out, "refused    "+filepath.Join(dir, "a.md")+": The API key is not valid.") ||
		!strings.Contains(out, "0 ingested, 0 skipped as duplicates, 1 refused, 6 not tried") ||
		!strings.Contains(out, "stopped: the server would refuse the other 6 files the same way") {
		t.Errorf("wrong key: exit %d\n%s", code, out)
	}
	code, out = runIngest(t, "-server", srv.URL, "-key", betaKey, "-shared", dir)
	if code != 1 || !strings.Contains(out, "may not add shared documents") || !strings.Contains(out, "1 refused, 6 not tried") {
		t.Errorf("shared upload with beta's key: exit %d\n%s", code, out)
	}
	code, out = runIngest(t, "-server", srv.URL, "-key", acmeKey, "-shared", dir)
	if code != 1 || !strings.Contains(out, "3 ingested, 1 skipped as duplicates, 3 refused") ||
		!strings.Contains(out, "refused    "+filepath.Join(dir, "big.md")+": The document is larger than the limit") {
		t.Errorf("exit %d\n%s", code, out)
	}

	// beta reads what acme shared.
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/knowledge/documents", nil)
	req.Header.Set("Authorization", "Bearer "+betaKey)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Documents []struct {
			Title, Status string
			Shared        bool
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Documents) != 3 {
		t.Fatalf("beta lists %+v; want the 3 shared documents", list.Documents)
	}
	for _, d := range list.Documents {
		if !d.Shared || d.Status != "ready" {
			t.Errorf("document %+v: want shared and ready", d)
		}
	}
}

// Through the server, a file whose text turns out to be stored already
// (other bytes: a re-saved copy) is reported as a duplicate, not refused.
func TestIngestThroughTheServerReportsALateFoundDuplicate(t *testing.T) {
	cfg := config.Default()
	cfg.Storage.SQLite.Path = filepath.Join(t.TempDir(), "chatpipe.db")
	cfg.Knowledge.SampleDocs = false
	cfg.Knowledge.Ingest.BackgroundBytes = 50 // the PDFs go to the background
	a, err := app.New(context.Background(), cfg, app.Options{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	defer func() {
		srv.Close()
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	}()
	pdf := docparsetest.PDF(t, "The lighthouse keeper writes the log at dusk.")
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"a/log.pdf":      string(pdf),
		"b/log-copy.pdf": string(pdf) + "\n% saved again\n",
	})
	if code, out := runIngest(t, "-server", srv.URL, filepath.Join(dir, "a")); code != 0 || !strings.Contains(out, "1 ingested") {
		t.Fatalf("first: exit %d\n%s", code, out)
	}
	code, out := runIngest(t, "-server", srv.URL, filepath.Join(dir, "b"))
	if code != 0 || !strings.Contains(out, "0 ingested, 1 skipped as duplicates, 0 refused") ||
		!strings.Contains(out, "duplicate  "+filepath.Join(dir, "b", "log-copy.pdf")+" (same content as document ") {
		t.Fatalf("the re-saved copy: exit %d\n%s", code, out)
	}
}

// A folder named through a symbolic link is walked; inside a folder a link
// to a file is read, while links to a folder or to nothing are listed as
// not followed. A FIFO is refused, not read (reading it would block).
func TestIngestFollowsALinkedFolderAndListsTheLinksItDoesNotFollow(t *testing.T) {
	_, _, cfgPath := storeConfig(t, "")
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"real/r.md":        "# Rivers\n\nRivers carry silt to the delta.",
		"elsewhere/e.md":   "# Estuary\n\nThe estuary mixes salt and fresh water.",
		"other/o.md":       "# Oxbow\n\nAn oxbow lake forms where a meander is cut off.",
		"elsewhere/x/y.md": "# Yardang\n\nWind carves yardangs out of soft rock.",
	})
	for link, target := range map[string]string{
		"link":               filepath.Join(root, "real"),
		"real/estuary.md":    filepath.Join(root, "elsewhere", "e.md"),
		"real/more":          filepath.Join(root, "elsewhere", "x"),
		"real/gone.md":       filepath.Join(root, "nothing-here.md"),
		"real/loop":          filepath.Join(root, "real", "loop"),
		"other/back-to-real": filepath.Join(root, "real"),
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	fifo := filepath.Join(root, "pipe.md")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	code, out := runIngest(t, "-config", cfgPath, link, fifo)
	if code != 1 {
		t.Errorf("exit %d, want 1 (the FIFO is refused)\n%s", code, out)
	}
	for _, want := range []string{
		"ingested   " + filepath.Join(link, "r.md"),
		"ingested   " + filepath.Join(link, "estuary.md"),
		"refused    " + fifo + ": not a regular file (a FIFO, socket or device), not read",
		"skipped    " + filepath.Join(link, "more") + ": a symbolic link to a folder, not followed",
		"skipped    " + filepath.Join(link, "gone.md") + ": a symbolic link to nothing readable",
		"skipped    " + filepath.Join(link, "loop") + ": a symbolic link to nothing readable",
		"2 ingested, 0 skipped as duplicates, 1 refused, 3 symbolic links not followed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	svc := openKnowledge(t, cfgPath)
	if _, total, err := svc.Documents(context.Background(), knowledge.DefaultTenant, 10, 0); err != nil || total != 2 {
		t.Errorf("%d documents stored (%v), want 2", total, err)
	}
}

// Flags after the paths are a usage error before anything is stored: the
// files would otherwise go to the default tenant, not the one asked for.
func TestIngestRefusesFlagsAfterThePathsBeforeStoringAnything(t *testing.T) {
	_, dbPath, cfgPath := storeConfig(t, "")
	dir := sampleFolder(t)
	code, out := runIngest(t, "-config", cfgPath, filepath.Join(dir, "a.md"), "-tenant", "acme")
	if code != 2 || !strings.Contains(out, "-tenant comes after the paths; flags go before them") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if _, err := os.Stat(dbPath); err == nil {
		t.Errorf("the store was opened (and %s created) before the usage error", dbPath)
	}
	// The shared documents' owner is no tenant to ingest as: -shared says
	// who adds them.
	if code, out := runIngest(t, "-config", cfgPath, "-tenant", "_shared", filepath.Join(dir, "a.md")); code != 2 ||
		!strings.Contains(out, "use -shared") {
		t.Errorf("-tenant _shared: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(dbPath); err == nil {
		t.Errorf("the store was opened (and %s created) for -tenant _shared", dbPath)
	}
	for _, args := range [][]string{{"-h"}, {"-config", cfgPath, "-h"}, {"-tenant", "acme", "--help"}} {
		if code, out := runIngest(t, args...); code != 0 || !strings.Contains(out, "usage: chatpipe ingest") {
			t.Errorf("%q: exit %d, want 0 with the usage\n%s", args, code, out)
		}
	}
	if code, _ := runIngest(t, "-bogus", "-h"); code != 2 {
		t.Errorf("a wrong flag before -h: exit %d, want 2", code)
	}
}

// -server takes a URL and no store settings; a server that cannot be
// reached stops the run at the first file.
func TestIngestThroughTheServerChecksItsArguments(t *testing.T) {
	dir := sampleFolder(t)
	for _, args := range [][]string{
		{"-server", "127.0.0.1:8080", dir},
		{"-server", "http://127.0.0.1:8080", "-tenant", "acme", dir},
		{"-server", "http://127.0.0.1:8080", "-config", "config.yaml", dir},
	} {
		if code, out := runIngest(t, args...); code != 2 || !strings.Contains(out, "chatpipe ingest: -") {
			t.Errorf("%q: exit %d, want a usage error\n%s", args, code, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	code, out := runIngest(t, "-server", "http://"+addr, dir)
	if code != 1 || !strings.Contains(out, "1 refused, 6 not tried (the server cannot be reached)") ||
		!strings.Contains(out, "stopped: the server cannot be reached; 6 more files were not tried") ||
		strings.Count(out, "cannot reach the server") != 2 { // its line and the summary's
		t.Errorf("exit %d\n%s", code, out)
	}
}
