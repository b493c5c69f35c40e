package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/docparse/docparsetest"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// These tests upload real documents (PDF, DOCX, PPTX, XLSX, CSV) through
// POST /api/v1/knowledge/documents and check what a user sees: the hit
// testing results and the references of a rag answer, with pages and
// headings; and the refusals of files that cannot be read.

// docFixture reads a file made by internal/docparse/testdata/make-fixtures.sh.
func docFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("../docparse/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// uploadFile sends a multipart upload and decodes the answer into out
// (a DocumentJSON or an ErrorBody); it returns the status.
func (h *harness) uploadFile(name string, data []byte, out any) int {
	h.t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	fw, _ := w.CreateFormFile("file", name)
	_, _ = fw.Write(data)
	_ = w.Close()
	resp := h.do(h.t.Context(), "POST", "/api/v1/knowledge/documents", b.String(), "Content-Type", w.FormDataContentType())
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		h.t.Fatalf("upload %s: %d, body not JSON: %v", name, resp.StatusCode, err)
	}
	return resp.StatusCode
}

func (h *harness) mustUpload(name string, data []byte) handler.DocumentJSON {
	h.t.Helper()
	var d handler.DocumentJSON
	if code := h.uploadFile(name, data, &d); code != http.StatusCreated || d.ID == "" || d.Chunks == 0 {
		h.t.Fatalf("upload %s: %d %+v", name, code, d)
	}
	return d
}

// hitOf is the first hit of doc among the results of query.
func (h *harness) hitOf(query, docID string) (handler.SearchHitJSON, bool) {
	h.t.Helper()
	for _, x := range h.search(query).Hits {
		if x.DocumentID == docID {
			return x, true
		}
	}
	return handler.SearchHitJSON{}, false
}

// referenceOf asks question in a new session (the fake model answers
// citing [1]) and returns the reference to doc in the references event.
func (h *harness) referenceOf(question, docID string) eventbus.Reference {
	h.t.Helper()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("See [1].", 3)})
	evs := h.ask(h.createSession(), question).all()
	at := indexOf(evs, eventbus.TypeReferences)
	if at < 0 {
		h.t.Fatalf("%q: no references event: %v", question, types(evs))
	}
	for _, r := range evs[at].Payload.(eventbus.References).Items {
		if r.DocumentID == docID {
			return r
		}
	}
	h.t.Fatalf("%q: no reference to document %s in %+v", question, docID, evs[at].Payload)
	return eventbus.Reference{}
}

func TestUploadedPDFsAreFoundAndCitedWithTheirPage(t *testing.T) {
	h := newHarness(t, ragMode)
	cases := []struct {
		producer, file string
		data           []byte
		question       string
		phrase         string // on page 3
	}{
		{"fpdf", "crossings.pdf", docparsetest.PDF(t, "The ferry company was founded in 1901.",
			"Tickets are sold at the harbour kiosk.", "Dogs travel free on the upper deck if they wear a muzzle."),
			"Can dogs travel on the upper deck?", "Dogs travel free on the upper deck if they wear a muzzle."},
		{"fpdf, Chinese", "图书馆.pdf", docparsetest.ChinesePDF(t, docparsetest.ChineseText...),
			"逾期归还的图书收取多少滞纳金？", "逾期归还的图书每天收取五角滞纳金"},
		{"groff", "cranes.pdf", docFixture(t, "groff-manual.pdf"),
			"When must lifting stop because of the anemometer?", "Stop all lifting when the anemometer reads above fifteen metres per second."},
		{"ghostscript", "orchard.pdf", docFixture(t, "ghostscript-orchard.pdf"),
			"When should I prune the pear branches?", "prune the pear branches in late winter before buds open."},
		{"LibreOffice, Chinese", "茶园.pdf", docFixture(t, "libreoffice-chinese.pdf"),
			"夏季要防治什么虫害？", "夏季要注意防治茶尺蠖虫害"},
	}
	for _, c := range cases {
		doc := h.mustUpload(c.file, c.data)
		if doc.MediaType != "application/pdf" {
			t.Fatalf("%s: media type %q", c.producer, doc.MediaType)
		}
		hit, ok := h.hitOf(c.phrase, doc.ID)
		if !ok || hit.Page != 3 || !strings.Contains(hit.Content, c.phrase) {
			t.Fatalf("%s: search %q: found %v, hit %+v; want page 3", c.producer, c.phrase, ok, hit)
		}
		ref := h.referenceOf(c.question, doc.ID)
		if ref.Page != 3 || !strings.Contains(ref.Content, c.phrase) {
			t.Fatalf("%s: reference %+v, want page 3 with %q", c.producer, ref, c.phrase)
		}
	}

	// The Chinese file encrypted by qpdf with 256-bit AES and an owner
	// password only (what "restrict editing" writes) is read as any viewer
	// reads it: here the same text as 茶园.pdf, so a duplicate of it, and
	// in a knowledge base of its own found on its page 3.
	locked := docFixture(t, "qpdf-aes256-owner-only.pdf")
	var dup handler.DocumentJSON
	if code := h.uploadFile("茶园-受限.pdf", locked, &dup); code != http.StatusOK || !dup.Duplicate || dup.Source != "茶园.pdf" {
		t.Fatalf("the encrypted copy: %d %+v; want 200, a duplicate of 茶园.pdf", code, dup)
	}
	other := newHarness(t, ragMode)
	lockedDoc := other.mustUpload("茶园-受限.pdf", locked)
	if hit, ok := other.hitOf("夏季要注意防治茶尺蠖虫害", lockedDoc.ID); !ok || hit.Page != 3 {
		t.Fatalf("the encrypted copy: hit %+v, %v; want page 3", hit, ok)
	}

	// Saved with the answer: the page comes back with the message.
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("See [1].", 3)})
	session := h.createSession()
	s := h.ask(session, "Can dogs travel on the upper deck?")
	s.all()
	msg := h.message(session, s.messageID())
	if len(msg.References) == 0 || msg.References[0].Page != 3 {
		t.Fatalf("saved references %+v, want page 3 first", msg.References)
	}

	// A PDF without an extension is known by its content.
	doc := h.mustUpload("scan-0042", docparsetest.PDF(t, "Invoice number 0042 for rope and shackles."))
	if doc.MediaType != "application/pdf" || doc.Title != "Generated test document" { // the PDF's own title
		t.Fatalf("PDF without extension: %+v", doc)
	}
}

func TestFilledFormsTurnedTablesRightToLeftBlankPagesPrefixedAndLZWPDFsAreSearchable(t *testing.T) {
	h := newHarness(t, ragMode)
	cases := []struct {
		what, file string
		data       []byte
		phrase     string
	}{
		{"a filled form's value", "application.pdf", docparsetest.FormPDF("Applicant name:", "Marguerite Okafor"), "Marguerite Okafor"},
		{"a table turned 90 degrees", "report.pdf", docparsetest.FlatePDF(t, []byte(
			"BT /F1 12 Tf 0 1 -1 0 300 100 Tm [(Quar) 20 (terly) -300 (rain) 10 (fall)] TJ ET")), "Quarterly rainfall"},
		{"a gateway's line before the header", "mailed.pdf",
			append([]byte("Content-Type: application/pdf\r\n\r\n"), docparsetest.PDF(t, "Lanterns are lit at dusk on the pier.")...),
			"Lanterns are lit at dusk"},
		{"Hebrew drawn from left to right", "hours.pdf", docparsetest.HebrewPDF(t, false), "פתוחה עד השעה"},
	}
	for _, c := range cases {
		doc := h.mustUpload(c.file, c.data)
		if hit, ok := h.hitOf(c.phrase, doc.ID); !ok || !strings.Contains(hit.Content, c.phrase) {
			t.Errorf("%s: search %q: found %v, hit %+v", c.what, c.phrase, ok, hit)
		}
	}
	// A blank page with no content stream is a page without text, not
	// damage: the next page is found, with its number.
	doc := h.mustUpload("minutes.pdf", docparsetest.BlankFirstPagePDF("The harbour board met on Tuesday."))
	if hit, ok := h.hitOf("harbour board met", doc.ID); !ok || hit.Page != 2 {
		t.Errorf("after a blank page: found %v, hit %+v; want page 2", ok, hit)
	}
	// Streams compressed with LZW (PDF 1.0's filter) are read, pages kept.
	doc = h.mustUpload("1992-tide-tables.pdf", docparsetest.LZWPDF(t, true,
		"Tide tables for the outer harbour.", "Spring tides and neap tides.", "The ferry waits for the flood tide at Kettle Point."))
	if hit, ok := h.hitOf("ferry flood tide Kettle Point", doc.ID); !ok || hit.Page != 3 {
		t.Errorf("an LZW PDF: found %v, hit %+v; want page 3", ok, hit)
	}
}

func TestStrictWordFilesAndTheirFootnotesAreSearchable(t *testing.T) {
	h := newHarness(t, ragMode)
	docx := docparsetest.DOCX(t, "Lease",
		docparsetest.Para{Level: 1, Text: "Terms"},
		docparsetest.Para{Text: "The tenant pays on the first of the month.", Footnote: 1})
	docx = docparsetest.WithPart(t, docx, "word/footnotes.xml",
		docparsetest.Footnotes("Late payment adds a fee of two percent."))
	doc := h.mustUpload("lease.docx", docparsetest.Strict(t, docx))
	hit, ok := h.hitOf("late payment fee", doc.ID)
	if !ok || hit.Heading != "Footnotes" || !strings.Contains(hit.Content, "two percent") {
		t.Fatalf("search for the footnote: found %v, hit %+v", ok, hit)
	}
}

func TestUploadedOfficeFilesKeepHeadingsSlidesAndHeaderRows(t *testing.T) {
	h := newHarness(t, ragMode)

	docx := h.mustUpload("tent.docx", docparsetest.DOCX(t, "Tent Manual",
		docparsetest.Para{Level: 1, Text: "Guide"},
		docparsetest.Para{Text: "Read the whole guide before the first trip."},
		docparsetest.Para{Level: 2, Text: "Install"},
		docparsetest.Para{Text: "Pitch the tent with the door facing away from the wind."},
		docparsetest.Para{Rows: [][]string{{"Part", "Count"}, {"Aluminium pegs", "12"}}},
	))
	if docx.Title != "Tent Manual" {
		t.Fatalf("DOCX title %q", docx.Title)
	}
	if ref := h.referenceOf("Door facing away from wind?", docx.ID); ref.Heading != "Guide > Install" || ref.Page != 0 {
		t.Fatalf("DOCX reference %+v, want heading Guide > Install", ref)
	}
	if hit, _ := h.hitOf("aluminium pegs", docx.ID); !strings.Contains(hit.Content, "Aluminium pegs | 12") {
		t.Fatalf("DOCX table row: hit %+v", hit)
	}
	lo := h.mustUpload("handbook.docx", docFixture(t, "libreoffice-handbook.docx"))
	if ref := h.referenceOf("Where do the wheelbarrows go after use?", lo.ID); ref.Heading != "Volunteer Handbook > Safety > Tools" {
		t.Fatalf("LibreOffice DOCX reference %+v", ref)
	}

	pptx := h.mustUpload("roadmap.pptx", docparsetest.PPTX(t,
		docparsetest.Slide{Title: "Roadmap", Body: []string{"Ship the timetable app in spring."}},
		docparsetest.Slide{Title: "Budget", Body: []string{"Spending by quarter."}, Rows: [][]string{{"Quarter", "Spend"}, {"Q1", "forty thousand"}}},
		docparsetest.Slide{Title: "Risks", Body: []string{"Winter storms may delay the pier renovation."}},
	))
	if ref := h.referenceOf("What may delay the pier renovation?", pptx.ID); ref.Heading != "Risks" || ref.Page != 3 {
		t.Fatalf("PPTX reference %+v, want slide 3 Risks", ref)
	}
	ferry := h.mustUpload("ferry.pptx", docFixture(t, "libreoffice-ferry.pptx"))
	if hit, _ := h.hitOf("bicycles lower car deck", ferry.ID); hit.Page != 3 || hit.Heading != "Bicycles on Board" {
		t.Fatalf("LibreOffice PPTX hit %+v", hit)
	}

	csv := h.mustUpload("lines.csv", []byte("Line;Colour;Length km\nBlue;blue;12\nRed;red;8,5\nGreen;green;20\n"))
	if hit, ok := h.hitOf("Red line length", csv.ID); !ok || !strings.HasPrefix(hit.Content, "Line | Colour | Length km\n") ||
		!strings.Contains(hit.Content, "\nRed | red | 8,5") {
		t.Fatalf("CSV hit %+v: want the row under its header", hit)
	}

	xlsx := h.mustUpload("crew.xlsx", docparsetest.XLSX(t,
		docparsetest.Sheet{Name: "Staff", Rows: [][]any{{"Name", "Role"}, {"Ana", "Pilot"}}},
		docparsetest.Sheet{Name: "Boats", Rows: [][]any{{"Boat", "Seats", "Home port"}, {"Seagull", 120, "Setúbal"}}},
	))
	ref := h.referenceOf("How many seats does the Seagull have?", xlsx.ID)
	if ref.Heading != "Boats" || !strings.Contains(ref.Content, "Boat | Seats | Home port") || !strings.Contains(ref.Content, "Seagull | 120 | Setúbal") {
		t.Fatalf("XLSX reference %+v: want sheet Boats, header and row", ref)
	}
	// A date cell in Excel's built-in short date reads with its year whole,
	// so the year finds it (m/d/yy would read 2031 as "31").
	trips := h.mustUpload("trips.xlsx", docparsetest.XLSX(t, docparsetest.Sheet{Name: "Trips", Rows: [][]any{
		{"Ferry", "Sails"}, {"Kestrel", time.Date(2031, 3, 14, 0, 0, 0, 0, time.UTC)}}}))
	if hit, ok := h.hitOf("Kestrel 2031", trips.ID); !ok || !strings.Contains(hit.Content, "Kestrel | 2031-03-14") {
		t.Fatalf("XLSX date hit %+v (found %v): want the row with its date in full", hit, ok)
	}
	stations := h.mustUpload("stations.xlsx", docFixture(t, "libreoffice-stations.xlsx"))
	if hit, _ := h.hitOf("Porto", stations.ID); !strings.Contains(hit.Content, "Station | City | Opened\n") || !strings.Contains(hit.Content, "River Quay | Porto | 2004") {
		t.Fatalf("LibreOffice XLSX hit %+v", hit)
	}
}

func TestUnreadableFilesAreRefusedWithAReasonAndNothingIsStored(t *testing.T) {
	h := newHarness(t, ragMode, func(c *config.Config) { c.Knowledge.MaxFileBytes = 64 << 10 })
	good := docparsetest.PDF(t, "Lighthouse keepers log the lamp hours nightly.")
	// Over the limit is refused before it is parsed: a valid PDF with a
	// long comment after it is as good as a long one.
	big := append(docparsetest.PDF(t, "classified lighthouse budget"), bytes.Repeat([]byte("%\n"), 40<<10)...)
	cases := []struct {
		what, file string
		data       []byte
		status     int
		code, says string
	}{
		{"scanned PDF", "scan.pdf", docFixture(t, "scanned.pdf"), 422, "no_text", "No extractable text (scanned PDF?)"},
		{"image-only PDF", "photo.pdf", docparsetest.ScannedPDF(t, 3), 422, "no_text", "No extractable text (scanned PDF?)"},
		{"encrypted PDF", "secret.pdf", docparsetest.EncryptedPDF(t, "classified lighthouse budget"), 422, "encrypted_document", "password"},
		{"PDF with a user password (256-bit AES, qpdf)", "locked.pdf", docFixture(t, "qpdf-aes256-user-password.pdf"), 422, "encrypted_document", "password"},
		{"truncated PDF", "cut.pdf", good[:len(good)*2/3], 422, "corrupt_document", "damaged"},
		{"zip bomb", "bomb.docx", docparsetest.LyingZipBomb(t), 413, "document_too_large", "zip bomb"},
		{"small zip bomb", "bomb.docx", docparsetest.ZipBomb(t, 8<<20), 413, "document_too_large", "zip bomb"},
		{"DOCX whose part holds more than it declares", "lying.docx", docparsetest.UnderstatedZip(t), 422, "corrupt_document", "declares"},
		{"DOCX that is a ZIP of photos", "report.docx", docparsetest.Zip(t, [2]string{"photos/classified.txt", "classified lighthouse budget"}), 422, "corrupt_document", "ZIP archive of something else"},
		{"password-protected DOCX", "locked.docx", append([]byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}, make([]byte, 1024)...), 422, "encrypted_document", "password"},
		{"PDF over knowledge.max_file_bytes", "huge.pdf", big, 413, "document_too_large", "knowledge.max_file_bytes"},
		{"PDF whose cross-reference sections loop", "loop.pdf", docparsetest.LoopingXrefPDF("classified lighthouse budget"), 422, "corrupt_document", "damaged"},
		{"PDF listing one page 22,500 times", "pages.pdf", docparsetest.RepeatedPagesPDF("classified lighthouse budget", 150), 413, "document_too_large", "split it"},
	}
	for _, c := range cases {
		var e handler.ErrorBody
		if code := h.uploadFile(c.file, c.data, &e); code != c.status || e.Error.Code != c.code || !strings.Contains(e.Error.Message, c.says) {
			t.Errorf("%s: %d %+v; want %d %s saying %q", c.what, code, e.Error, c.status, c.code, c.says)
		}
		if strings.Contains(e.Error.Message, "goroutine") || strings.Contains(e.Error.Message, ".go:") {
			t.Errorf("%s: the message leaks internals: %q", c.what, e.Error.Message)
		}
	}
	if total := h.documentTotal(); total != 0 {
		t.Fatalf("%d documents stored from refused uploads", total)
	}
	if hits := h.search("classified lighthouse budget").Hits; len(hits) != 0 {
		t.Fatalf("refused files are searchable: %+v", hits)
	}
	// The server keeps serving.
	doc := h.mustUpload("lamp.pdf", good)
	if hit, ok := h.hitOf("lamp hours", doc.ID); !ok || hit.Page != 1 {
		t.Fatalf("after the refusals: hit %+v, %v", hit, ok)
	}
	// A PDF whose owner password only restricts printing or copying opens
	// in any viewer without a password, and is read: an old print-only
	// one (40-bit RC4) here, a 256-bit AES one among the producers.
	doc = h.mustUpload("print-only.pdf", docparsetest.OwnerProtectedPDF(t, "classified lighthouse budget"))
	if hit, ok := h.hitOf("classified lighthouse budget", doc.ID); !ok || hit.Page != 1 {
		t.Fatalf("print-only PDF: hit %+v, %v", hit, ok)
	}
}

// A file over knowledge.ingest.background_bytes is parsed in the
// background like a large text: 202, pages counted while it is processed,
// searchable with its pages once ready.
func TestLargePDFIsIngestedInTheBackgroundWithPageProgress(t *testing.T) {
	emb := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 32})
	h := newHarness(t, withEmbeddings(emb), withBackgroundIngest)
	gate := make(chan struct{})
	emb.Hold(gate)
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	pdf := docparsetest.PDF(t, "The lighthouse keeper writes the log at dusk.",
		"The lamp is cleaned every morning.", "Seals rest on the northern rocks at low tide.", "Visitors climb the tower on Sundays.")
	var doc handler.DocumentJSON
	if code := h.uploadFile("lighthouse.pdf", pdf, &doc); code != http.StatusAccepted || doc.Status != "processing" {
		t.Fatalf("upload: %d %+v; want 202 processing", code, doc)
	}
	// Parsed and chunked, waiting for its embeddings: every page counted.
	d := h.waitDocument(doc.ID, func(d handler.DocumentJSON) bool { return d.Progress != nil && d.Progress.ChunksTotal > 0 })
	if d.Progress.PagesTotal != 4 || d.Progress.PagesDone != 4 {
		t.Errorf("progress while processing = %+v; want 4 of 4 pages", *d.Progress)
	}
	if _, found := h.hitOf("seals northern rocks", doc.ID); found {
		t.Fatal("a processing PDF was found by search")
	}
	close(gate)
	ready := h.waitDocument(doc.ID, hasStatus("ready"))
	if ready.MediaType != "application/pdf" || ready.Chunks == 0 {
		t.Fatalf("ready document = %+v", ready)
	}
	hit, ok := h.hitOf("seals northern rocks", doc.ID)
	if !ok || hit.Page != 3 {
		t.Fatalf("search after ready: found %v, hit %+v; want page 3", ok, hit)
	}
}

// A zip bomb large enough for the background is refused at once, from
// its ZIP directory, like a small one: never stored as a processing
// document that can only fail.
func TestAZipBombIsRefusedAtOnceNotQueued(t *testing.T) {
	h := newHarness(t, withBackgroundIngest)
	parts := [][2]string{{"word/document.xml", "<a/>"}}
	for i := range 10001 {
		parts = append(parts, [2]string{fmt.Sprintf("word/part%d.xml", i), "<a/>"})
	}
	for what, bomb := range map[string][]byte{
		"a thousand times its size": docparsetest.ZipBomb(t, 8<<20),
		"10,002 parts":              docparsetest.Zip(t, parts...),
	} {
		if len(bomb) <= 100 {
			t.Fatalf("%s: the bomb is %d bytes: not over background_bytes", what, len(bomb))
		}
		var e handler.ErrorBody
		if code := h.uploadFile("bomb.docx", bomb, &e); code != http.StatusRequestEntityTooLarge || e.Error.Code != "document_too_large" ||
			!strings.Contains(e.Error.Message, "zip bomb") {
			t.Errorf("%s: %d %+v; want 413 document_too_large", what, code, e.Error)
		}
	}
	if total := h.documentTotal(); total != 0 {
		t.Fatalf("%d documents stored from refused uploads", total)
	}
}

// A file whose bytes are new but whose text is stored already is only
// known once read: its background ingest fails naming the document that
// has the text, so a client can say so rather than "refused".
func TestALargeFileWithStoredTextFailsNamingTheDocumentThatHasIt(t *testing.T) {
	h := newHarness(t, withBackgroundIngest)
	pdf := docparsetest.PDF(t, "The lighthouse keeper writes the log at dusk.", "Seals rest on the northern rocks.")
	var first, resaved handler.DocumentJSON
	if code := h.uploadFile("lighthouse.pdf", pdf, &first); code != http.StatusAccepted {
		t.Fatalf("first upload: %d %+v", code, first)
	}
	h.waitDocument(first.ID, hasStatus("ready"))
	again := append(bytes.Clone(pdf), "\n% saved again\n"...) // other bytes, the same text
	if code := h.uploadFile("lighthouse-copy.pdf", again, &resaved); code != http.StatusAccepted {
		t.Fatalf("the re-saved file: %d %+v; want 202 (its bytes are new)", code, resaved)
	}
	d := h.waitDocument(resaved.ID, hasStatus("failed"))
	if d.DuplicateOf != first.ID || !strings.Contains(d.Error, "already stored") || d.Title != "lighthouse-copy" {
		t.Fatalf("the re-saved file's document: %+v; want failed, a duplicate of %s", d, first.ID)
	}
	// That copy again is known at once: a duplicate of the document that
	// has its text, and no second failed entry.
	var twice handler.DocumentJSON
	if code := h.uploadFile("lighthouse-copy.pdf", again, &twice); code != http.StatusOK || !twice.Duplicate || twice.ID != first.ID {
		t.Fatalf("the re-saved file again: %d %+v; want 200, a duplicate of %s", code, twice, first.ID)
	}
	// Once that document is gone, the copy is a document of its own.
	if code := h.call("DELETE", "/api/v1/knowledge/documents/"+first.ID, "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	var own handler.DocumentJSON
	if code := h.uploadFile("lighthouse-copy.pdf", again, &own); code != http.StatusAccepted {
		t.Fatalf("the copy after the original was deleted: %d %+v; want 202", code, own)
	}
	h.waitDocument(own.ID, hasStatus("ready"))
	if total := h.documentTotal(); total != 1 {
		t.Fatalf("%d documents; want the copy alone (its failed entry gone with the original)", total)
	}
}

// The same large file sent again is a duplicate at once, while its first
// upload is being ingested and once it is ready: 200 with the document,
// never a second document that can only fail.
func TestTheSameLargeFileAgainIsADuplicateBeforeItIsParsed(t *testing.T) {
	h := newHarness(t, withBackgroundIngest)
	pdf := docparsetest.PDF(t, "The lighthouse keeper writes the log at dusk.", "Seals rest on the northern rocks.")
	var first, again handler.DocumentJSON
	if code := h.uploadFile("lighthouse.pdf", pdf, &first); code != http.StatusAccepted {
		t.Fatalf("first upload: %d %+v; want 202", code, first)
	}
	if code := h.uploadFile("copy.pdf", pdf, &again); code != http.StatusOK || !again.Duplicate || again.ID != first.ID {
		t.Fatalf("the same file again while processing: %d %+v; want 200, a duplicate of %s", code, again, first.ID)
	}
	h.waitDocument(first.ID, hasStatus("ready"))
	again = handler.DocumentJSON{}
	if code := h.uploadFile("lighthouse.pdf", pdf, &again); code != http.StatusOK || !again.Duplicate || again.ID != first.ID ||
		again.Status != "ready" {
		t.Fatalf("the same file once ready: %d %+v; want 200, a duplicate of %s", code, again, first.ID)
	}
	if total := h.documentTotal(); total != 1 {
		t.Fatalf("%d documents; want the one", total)
	}
}

// The form itself: one file per upload, a "shared" field that says yes or
// no, and a file name that cannot pass for another or hide its type.
func TestUploadFormsAreReadStrictlyAndFileNamesCleaned(t *testing.T) {
	h := newHarness(t)
	form := func(fields ...[2]string) (*bytes.Buffer, string) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		for _, f := range fields {
			if strings.HasPrefix(f[0], "file:") {
				fw, _ := w.CreateFormFile("file", strings.TrimPrefix(f[0], "file:"))
				_, _ = fw.Write([]byte(f[1]))
				continue
			}
			_ = w.WriteField(f[0], f[1])
		}
		_ = w.Close()
		return &b, w.FormDataContentType()
	}
	send := func(fields ...[2]string) (int, []byte) {
		t.Helper()
		body, ct := form(fields...)
		resp := h.do(t.Context(), "POST", "/api/v1/knowledge/documents", body.String(), "Content-Type", ct)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	before := h.documentTotal()
	for _, c := range []struct {
		what   string
		fields [][2]string
		code   string
		says   string
	}{
		{"two files", [][2]string{{"file:a.txt", "The otter floats on its back."}, {"file:b.txt", "The heron waits in the reeds."}},
			"too_many_files", "send one file per upload"},
		{"a shared field that is neither yes nor no", [][2]string{{"shared", "maybe"}, {"file:a.txt", "The otter floats on its back."}},
			"invalid_field", `"shared" field must be true or false`},
	} {
		status, body := send(c.fields...)
		var e handler.ErrorBody
		if err := json.Unmarshal(body, &e); err != nil || status != http.StatusBadRequest || e.Error.Code != c.code ||
			!strings.Contains(e.Error.Message, c.says) {
			t.Errorf("%s: %d %s; want 400 %s saying %q", c.what, status, body, c.code, c.says)
		}
	}
	if n := h.documentTotal(); n != before {
		t.Errorf("%d documents after the refused uploads, want %d", n, before)
	}

	// A direction override would show "report‮fdp.exe" as "reportexe.pdf";
	// a trailing dot hides no type: the content decides.
	for _, c := range []struct{ sent, title string }{
		{"report\u202efdp.txt", "reportfdp"},
		{"notes.", "notes"},
		{"zero\u200bwidth.md", "zerowidth"},
	} {
		status, body := send([2]string{"file:" + c.sent, "The " + c.title + " file tells of kingfishers by the weir."})
		var d handler.DocumentJSON
		if err := json.Unmarshal(body, &d); err != nil || status != http.StatusCreated || d.Title != c.title {
			t.Errorf("upload named %q: %d %s; want 201 titled %q", c.sent, status, body, c.title)
		}
	}
	// A given title is cleaned alike.
	status, body := send([2]string{"title", "Tide\u202e tables\u200b"}, [2]string{"file:tides.txt", "The tide turns twice a day at the harbour."})
	var titled handler.DocumentJSON
	if json.Unmarshal(body, &titled) != nil || status != http.StatusCreated || titled.Title != "Tide tables" {
		t.Errorf("a title with invisible characters: %d %s; want 201 titled %q", status, body, "Tide tables")
	}
	if status, body := send([2]string{"shared", "off"}, [2]string{"file:off.txt", "The moorhen nests on the bank."}); status != http.StatusCreated ||
		strings.Contains(string(body), `"shared":true`) {
		t.Errorf(`shared "off": %d %s`, status, body)
	}
}

// Whether an upload is ingested before the answer goes by what it unpacks
// to, not by its compressed size: a 2 KB DOCX holding 600 KB of text is
// ingested in the background (202), as a 600 KB text would be.
func TestASmallFileThatUnpacksLargeIsIngestedInTheBackground(t *testing.T) {
	h := newHarness(t, ragMode)
	words := strings.Repeat("pebble ", 600<<10/len("pebble "))
	data := docparsetest.DOCX(t, "Shingle", docparsetest.Para{Text: "Shingle beaches hold " + words})
	if len(data) > 64<<10 {
		t.Fatalf("the DOCX is %d bytes; the test wants a small file", len(data))
	}
	var doc handler.DocumentJSON
	if code := h.uploadFile("shingle.docx", data, &doc); code != http.StatusAccepted || doc.Status != "processing" {
		t.Fatalf("upload: %d %+v; want 202 processing", code, doc)
	}
	if ready := h.waitDocument(doc.ID, hasStatus("ready")); ready.Chunks == 0 {
		t.Fatalf("ready document = %+v", ready)
	}
	small := docparsetest.DOCX(t, "Cove", docparsetest.Para{Text: "A cove is a small sheltered bay."})
	if code := h.uploadFile("cove.docx", small, &doc); code != http.StatusCreated {
		t.Fatalf("a small DOCX: %d, want 201", code)
	}
}

// A PDF's pages are compressed streams whose text only parsing measures:
// a small PDF found to hold more text than background_bytes is handed to
// the bounded background workers instead of being read on the request
// (202, then ready and searchable), and a page that inflates to millions
// of characters fails there, with its reason and nothing searchable.
func TestASmallPDFHoldingMuchTextIsIngestedInTheBackground(t *testing.T) {
	h := newHarness(t, ragMode)
	line := "BT /F1 12 Tf 72 712 Td (tidal harbour ledger) Tj ET\n"
	long := docparsetest.FlatePDF(t, []byte(strings.Repeat(line, 300<<10/len("tidal harbour ledger"))))
	bomb := docparsetest.PageBombPDF(t)
	for name, data := range map[string][]byte{"ledger.pdf": long, "bomb.pdf": bomb} {
		if int64(len(data)) > config.Default().Knowledge.Ingest.BackgroundBytes {
			t.Fatalf("%s is %d bytes; the test wants a file under background_bytes", name, len(data))
		}
	}
	var doc handler.DocumentJSON
	if code := h.uploadFile("ledger.pdf", long, &doc); code != http.StatusAccepted || doc.Status != "processing" {
		t.Fatalf("upload: %d %+v; want 202 processing", code, doc)
	}
	if ready := h.waitDocument(doc.ID, hasStatus("ready")); ready.Chunks == 0 {
		t.Fatalf("ready document = %+v", ready)
	}
	if _, ok := h.hitOf("harbour ledger", doc.ID); !ok {
		t.Fatal("the PDF ingested in the background is not found")
	}

	if code := h.uploadFile("bomb.pdf", bomb, &doc); code != http.StatusAccepted {
		t.Fatalf("bomb upload: %d %+v; want 202", code, doc)
	}
	failed := h.waitDocument(doc.ID, hasStatus("failed"))
	if !strings.Contains(failed.Error, "decompression bomb") {
		t.Errorf("failed bomb says %q; want the decompression bomb named", failed.Error)
	}
	if hits := h.search("bomb word here").Hits; len(hits) != 0 {
		t.Fatalf("the bomb is searchable: %+v", hits)
	}

	// So is a PDF with little text whose page draws millions of lines:
	// drawing takes parsing time too.
	chart := docparsetest.FlatePDF(t, []byte("BT /F1 12 Tf 72 712 Td (tidal chart soundings) Tj ET\n"+strings.Repeat("0 0 m 1 1 l S\n", 1<<20)))
	if int64(len(chart)) > config.Default().Knowledge.Ingest.BackgroundBytes {
		t.Fatalf("chart.pdf is %d bytes; the test wants a file under background_bytes", len(chart))
	}
	if code := h.uploadFile("chart.pdf", chart, &doc); code != http.StatusAccepted {
		t.Fatalf("chart upload: %d %+v; want 202", code, doc)
	}
	if ready := h.waitDocument(doc.ID, hasStatus("ready")); ready.Chunks == 0 {
		t.Fatalf("ready chart = %+v", ready)
	}
	if _, ok := h.hitOf("chart soundings", doc.ID); !ok {
		t.Fatal("the chart ingested in the background is not found")
	}

	// A PDF with little text is still answered at once.
	if code := h.uploadFile("cove.pdf", docparsetest.PDF(t, "A cove is a small sheltered bay."), &doc); code != http.StatusCreated {
		t.Fatalf("a small PDF: %d, want 201", code)
	}
}

// A PDF named like a text file is read as the PDF it is (as a PDF named
// .docx is), not refused as binary text.
func TestAPDFNamedLikeATextIsReadAsAPDF(t *testing.T) {
	h := newHarness(t, ragMode)
	doc := h.mustUpload("minutes.md", docparsetest.PDF(t, "The harbour board met on Tuesday.", "The breakwater repairs are approved."))
	if doc.MediaType != "application/pdf" {
		t.Errorf("media type %q, want application/pdf", doc.MediaType)
	}
	if hit, ok := h.hitOf("breakwater repairs approved", doc.ID); !ok || hit.Page != 2 {
		t.Fatalf("hit %+v (found %v); want page 2", hit, ok)
	}
}
