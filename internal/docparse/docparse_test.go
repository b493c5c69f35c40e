package docparse_test

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"
	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/internal/docparse"
	"github.com/chatpipe/chatpipe/internal/docparse/docparsetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func parse(t testing.TB, name string, data []byte) *docparse.Document {
	t.Helper()
	doc, err := docparse.Parse(context.Background(), name, data, docparse.Options{})
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return doc
}

// pageOf returns the page of the section holding phrase, or -1.
func pageOf(doc *docparse.Document, phrase string) int {
	for _, s := range doc.Sections {
		if strings.Contains(s.Text, phrase) {
			return s.Page
		}
	}
	return -1
}

func TestParsePDFKeepsPagesAndTextFromEveryProducer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		producer, name string
		data           []byte
		pages          int
		phrase         string // on page 3
	}{
		{"fpdf (Go)", "fpdf.pdf", docparsetest.PDF(t, "Apples grow in the north orchard.", "Pears ripen in September.",
			"Cherry trees need netting against starlings."), 3, "Cherry trees need netting against starlings."},
		{"fpdf (Go), Chinese TrueType", "fpdf-zh.pdf", docparsetest.ChinesePDF(t, docparsetest.ChineseText...), 3,
			"逾期归还的图书每天收取五角滞纳金"},
		{"groff", "groff-manual.pdf", fixture(t, "groff-manual.pdf"), 4,
			"Stop all lifting when the anemometer reads above fifteen metres per second."},
		{"ghostscript ps2pdf", "ghostscript-orchard.pdf", fixture(t, "ghostscript-orchard.pdf"), 3,
			"prune the pear branches in late winter before buds open."},
		{"LibreOffice, Chinese", "libreoffice-chinese.pdf", fixture(t, "libreoffice-chinese.pdf"), 3,
			"夏季要注意防治茶尺蠖虫害"},
		// the same file encrypted by qpdf with 256-bit AES and an owner
		// password only: any viewer opens it, and so do we
		{"qpdf, 256-bit AES, owner password only", "locked.pdf", fixture(t, "qpdf-aes256-owner-only.pdf"), 3,
			"夏季要注意防治茶尺蠖虫害"},
		{"qpdf, 128-bit AES, owner password only", "locked.pdf", fixture(t, "qpdf-aes128-owner-only.pdf"), 3,
			"prune the pear branches in late winter before buds open."},
	}
	for _, c := range cases {
		t.Run(c.producer, func(t *testing.T) {
			doc := parse(t, c.name, c.data)
			if doc.MediaType != docparse.MediaPDF || doc.Pages != c.pages {
				t.Fatalf("media type %q, %d pages; want PDF, %d", doc.MediaType, doc.Pages, c.pages)
			}
			if p := pageOf(doc, c.phrase); p != 3 {
				t.Fatalf("%q found on page %d, want 3; sections: %+v", c.phrase, p, doc.Sections)
			}
		})
	}
}

// An owner-password-only PDF is decrypted without decoding what reading
// its text does not need: this one's XMP metadata inflates to 200 MiB
// (pdfcpu's validation decoded it, up to its own limit of 512 MiB).
// Counted in bytes allocated, not in time; not parallel, so that the
// count is this parse's.
func TestParsePDFDecryptsWithoutDecodingAMetadataBomb(t *testing.T) {
	data := fixture(t, "qpdf-aes256-metadata-bomb.pdf")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	doc := parse(t, "bomb.pdf", data)
	runtime.ReadMemStats(&after)
	if len(doc.Sections) != 1 || !strings.Contains(doc.Sections[0].Text, "The lighthouse metadata page.") {
		t.Fatalf("sections %+v", doc.Sections)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Fatalf("parsing a %d-byte file allocated %d MiB", len(data), n>>20)
	}
}

// A print-only PDF of old (40-bit RC4, an empty user password) is read:
// the reader alone would decrypt it with a key of the wrong length.
func TestParsePDFReadsAnOldPrintOnlyPDF(t *testing.T) {
	t.Parallel()
	doc := parse(t, "print-only.pdf", docparsetest.OwnerProtectedPDF(t, "classified lighthouse budget"))
	if len(doc.Sections) != 1 || !strings.Contains(doc.Sections[0].Text, "classified lighthouse budget") {
		t.Fatalf("sections %+v", doc.Sections)
	}
}

func TestParsePDFRebuildsLinesInReadingOrder(t *testing.T) {
	t.Parallel()
	doc := parse(t, "orchard.pdf", fixture(t, "ghostscript-orchard.pdf"))
	want := "Page three: prune the pear branches in late winter before buds open.\nA second line on page three about codling moth traps."
	if got := doc.Sections[2].Text; got != want {
		t.Fatalf("page 3 text:\n%q\nwant\n%q", got, want)
	}
}

func TestStrictOfficeFilesAndWordNotesAreRead(t *testing.T) {
	t.Parallel()
	docx := docparsetest.DOCX(t, "Lease",
		docparsetest.Para{Level: 1, Text: "Terms"},
		docparsetest.Para{Text: "The tenant pays on the first of the month.", Footnote: 1})
	// Word shows neither a note the text does not refer to (2) nor text
	// in a separator.
	notes := strings.Replace(string(docparsetest.Footnotes("Late payment adds a fee of two percent.", "An unreferenced draft clause.")),
		"<w:separator/>", "<w:separator/><w:t>separator words</w:t>", 1)
	docx = docparsetest.WithPart(t, docx, "word/footnotes.xml", []byte(notes))
	want := []docparse.Section{
		{Heading: "Terms", Text: "The tenant pays on the first of the month."},
		{Heading: "Footnotes", Text: "Late payment adds a fee of two percent."},
	}
	for what, data := range map[string][]byte{"transitional": docx, "strict": docparsetest.Strict(t, docx)} {
		if doc := parse(t, "lease.docx", data); !equalSections(doc.Sections, want) {
			t.Errorf("%s DOCX: sections\n%+v\nwant\n%+v", what, doc.Sections, want)
		}
	}

	// Damaged notes cost the notes, not the body.
	bad := docparsetest.WithPart(t, docparsetest.DOCX(t, "Lease",
		docparsetest.Para{Level: 1, Text: "Terms"},
		docparsetest.Para{Text: "The tenant pays on the first of the month."}),
		"word/endnotes.xml", []byte(`<w:endnotes xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:endnote><w:p>`))
	if doc := parse(t, "lease.docx", bad); !equalSections(doc.Sections, want[:1]) {
		t.Errorf("damaged endnotes: sections %+v, want the body's", doc.Sections)
	}

	pptx := docparsetest.PPTX(t,
		docparsetest.Slide{Title: "Ferry times", Body: []string{"Boats leave every hour."}},
		docparsetest.Slide{Title: "Fares", Body: []string{"Children travel free."}})
	plain := parse(t, "ferry.pptx", pptx)
	if strict := parse(t, "ferry.pptx", docparsetest.Strict(t, pptx)); !equalSections(strict.Sections, plain.Sections) || len(plain.Sections) != 2 {
		t.Errorf("strict PPTX: sections\n%+v\nwant\n%+v", strict.Sections, plain.Sections)
	}

	xlsx := docparsetest.XLSX(t, docparsetest.Sheet{Name: "Tides", Rows: [][]any{{"Port", "High water"}, {"Dover", "06:12"}}})
	plain = parse(t, "tides.xlsx", xlsx)
	if strict := parse(t, "tides.xlsx", docparsetest.Strict(t, xlsx)); !equalSections(strict.Sections, plain.Sections) || len(plain.Sections) == 0 {
		t.Errorf("strict XLSX: sections\n%+v\nwant\n%+v", strict.Sections, plain.Sections)
	}
}

func TestALongHeadingIsCutInPathsAndKeptAsText(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("harbour ", 100) + "lighthouse"
	docx := parse(t, "long.docx", docparsetest.DOCX(t, "Long",
		docparsetest.Para{Level: 1, Text: long},
		docparsetest.Para{Level: 2, Text: "Tides"},
		docparsetest.Para{Text: "High water at six."}))
	pptx := parse(t, "long.pptx", docparsetest.PPTX(t, docparsetest.Slide{Title: long, Body: []string{"High water at six."}}))
	for what, doc := range map[string]*docparse.Document{"DOCX": docx, "PPTX": pptx} {
		last := doc.Sections[len(doc.Sections)-1]
		if utf8.RuneCountInString(last.Heading) > 170 || !strings.Contains(last.Heading, "…") || !strings.Contains(doc.Text(), "harbour lighthouse") {
			t.Errorf("%s: sections %+v", what, doc.Sections)
		}
	}
}

func TestParseDOCXHeadingPathsAndTables(t *testing.T) {
	t.Parallel()
	data := docparsetest.DOCX(t, "Field Guide",
		docparsetest.Para{Level: 1, Text: "Guide"},
		docparsetest.Para{Text: "Read this first."},
		docparsetest.Para{Level: 2, Text: "Install"},
		docparsetest.Para{Text: "Unpack the tent on flat ground."},
		docparsetest.Para{Rows: [][]string{{"Part", "Count"}, {"Pegs", "12"}}},
		docparsetest.Para{Level: 1, Text: "Care"},
		docparsetest.Para{Text: "Dry the tent before storing it."},
	)
	doc := parse(t, "guide.docx", data)
	if doc.Title != "Field Guide" || doc.MediaType != docparse.MediaDOCX {
		t.Fatalf("title %q, media type %q", doc.Title, doc.MediaType)
	}
	want := []docparse.Section{
		{Heading: "Guide", Text: "Read this first."},
		{Heading: "Guide > Install", Text: "Unpack the tent on flat ground.\n\nPart | Count\nPegs | 12"},
		{Heading: "Care", Text: "Dry the tent before storing it."},
	}
	if !equalSections(doc.Sections, want) {
		t.Fatalf("sections\n%+v\nwant\n%+v", doc.Sections, want)
	}

	// Some generators write no word/styles.xml: Word's built-in style ids
	// still say which paragraphs are headings.
	if bare := parse(t, "guide.docx", withoutPart(t, data, "word/styles.xml")); !equalSections(bare.Sections, want) {
		t.Fatalf("without word/styles.xml: sections\n%+v\nwant\n%+v", bare.Sections, want)
	}

	lo := parse(t, "handbook.docx", fixture(t, "libreoffice-handbook.docx"))
	var tools docparse.Section
	for _, s := range lo.Sections {
		if strings.Contains(s.Text, "wheelbarrows") {
			tools = s
		}
	}
	if tools.Heading != "Volunteer Handbook > Safety > Tools" || !strings.Contains(tools.Text, "Rake | Green shed") {
		t.Fatalf("LibreOffice DOCX: section %+v", tools)
	}
}

func equalSections(a, b []docparse.Section) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParsePPTXSlidesInPresentationOrderWithTitles(t *testing.T) {
	t.Parallel()
	data := docparsetest.PPTX(t,
		docparsetest.Slide{Title: "Roadmap", Body: []string{"Ship the ferry app in spring."}},
		docparsetest.Slide{Title: "Budget", Body: []string{"Costs by quarter."}, Rows: [][]string{{"Quarter", "Cost"}, {"Q1", "40k"}}},
		docparsetest.Slide{Title: "Risks", Body: []string{"Storms delay the harbour works."}},
	)
	doc := parse(t, "deck.pptx", data)
	if doc.Pages != 3 || len(doc.Sections) != 3 {
		t.Fatalf("%d slides, sections %+v", doc.Pages, doc.Sections)
	}
	for i, want := range []docparse.Section{
		{Page: 1, Heading: "Roadmap", Text: "Ship the ferry app in spring."},
		{Page: 2, Heading: "Budget", Text: "Costs by quarter.\n\nQuarter | Cost\nQ1 | 40k"},
		{Page: 3, Heading: "Risks", Text: "Storms delay the harbour works."},
	} {
		if doc.Sections[i] != want {
			t.Fatalf("slide %d: %+v, want %+v", i+1, doc.Sections[i], want)
		}
	}

	lo := parse(t, "ferry.pptx", fixture(t, "libreoffice-ferry.pptx"))
	if p := pageOf(lo, "Bicycles travel free on the lower car deck."); p != 3 || lo.Sections[2].Heading != "Bicycles on Board" {
		t.Fatalf("LibreOffice PPTX: page %d, sections %+v", p, lo.Sections)
	}
}

func TestParseSpreadsheetsKeepTheHeaderRowPerSheet(t *testing.T) {
	t.Parallel()
	data := docparsetest.XLSX(t,
		docparsetest.Sheet{Name: "Staff", Rows: [][]any{{"Name", "Role"}, {"Ana", "Pilot"}, {"Bo", "Engineer"}}},
		docparsetest.Sheet{Name: "Boats", Rows: [][]any{{"Boat", "Seats"}, {"Gull", 120}}},
	)
	doc := parse(t, "crew.xlsx", data)
	want := []docparse.Section{
		{Heading: "Staff", Header: "Name | Role", Text: "Ana | Pilot\nBo | Engineer"},
		{Heading: "Boats", Header: "Boat | Seats", Text: "Gull | 120"},
	}
	if !equalSections(doc.Sections, want) {
		t.Fatalf("sections %+v, want %+v", doc.Sections, want)
	}
	dates := parse(t, "trips.xlsx", docparsetest.XLSX(t, docparsetest.Sheet{Name: "Trips", Rows: [][]any{{"Ferry", "Sails"},
		{"Kestrel", time.Date(2031, 3, 14, 0, 0, 0, 0, time.UTC)}, {"Tern", time.Date(1999, 12, 31, 17, 30, 0, 0, time.UTC)}}}))
	if len(dates.Sections) != 1 || dates.Sections[0].Text != "Kestrel | 2031-03-14\nTern | 1999-12-31 17:30" {
		t.Fatalf("XLSX dates (built-in formats 14 and 22): %+v, want ISO dates with the year whole", dates.Sections)
	}
	lo := parse(t, "stations.xlsx", fixture(t, "libreoffice-stations.xlsx"))
	if len(lo.Sections) != 1 || lo.Sections[0].Header != "Station | City | Opened" ||
		lo.Sections[0].Text != "North Gate | Lisbon | 1998\nRiver Quay | Porto | 2004" {
		t.Fatalf("LibreOffice XLSX: %+v", lo.Sections)
	}

	csvDoc := parse(t, "prices.csv", []byte("\uFEFFItem;Price\n\nTea;\"3,50\"\nCake;4\n"))
	if len(csvDoc.Sections) != 1 || csvDoc.Sections[0].Header != "Item | Price" || csvDoc.Sections[0].Text != "Tea | 3,50\nCake | 4" {
		t.Fatalf("CSV: %+v", csvDoc.Sections)
	}
}

func TestParseReportsProgressPerPage(t *testing.T) {
	t.Parallel()
	var calls [][2]int
	_, err := docparse.Parse(context.Background(), "a.pdf", docparsetest.PDF(t, "one", "two", "three"),
		docparse.Options{Progress: func(done, total int) { calls = append(calls, [2]int{done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{1, 3}, {2, 3}, {3, 3}}; len(calls) != 3 || calls[0] != want[0] || calls[2] != want[2] {
		t.Fatalf("progress calls %v, want %v", calls, want)
	}
}

func TestParseStopsWhenCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := docparse.Parse(ctx, "a.pdf", docparsetest.PDF(t, "one"), docparse.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestParseRefusesBadFilesWithAReason(t *testing.T) {
	t.Parallel()
	pdfData := docparsetest.PDF(t, "Some text on a page.")
	manyEntries := make([][2]string, 0, 30)
	for i := range 30 {
		manyEntries = append(manyEntries, [2]string{"word/part" + strings.Repeat("x", i) + ".xml", "<a/>"})
	}
	cases := []struct {
		what, name string
		data       []byte
		opts       docparse.Options
		want       error
		message    string
	}{
		{"scanned PDF (Go writer)", "scan.pdf", docparsetest.ScannedPDF(t, 2), docparse.Options{}, docparse.ErrNoText, "no extractable text (scanned PDF?)"},
		{"scanned PDF (ps2pdf, inline image)", "scan.pdf", fixture(t, "scanned.pdf"), docparse.Options{}, docparse.ErrNoText, "no extractable text (scanned PDF?)"},
		{"encrypted PDF", "secret.pdf", docparsetest.EncryptedPDF(t, "classified"), docparse.Options{}, docparse.ErrEncrypted, "encrypted"},
		{"PDF with a user password (256-bit AES, qpdf)", "secret.pdf", fixture(t, "qpdf-aes256-user-password.pdf"), docparse.Options{}, docparse.ErrEncrypted, "encrypted (password-protected)"},
		{"truncated PDF", "cut.pdf", pdfData[:len(pdfData)/2], docparse.Options{}, docparse.ErrCorrupt, "damaged"},
		{"not a PDF", "fake.pdf", []byte("hello, I am text"), docparse.Options{}, docparse.ErrCorrupt, "not a PDF"},
		{"zip bomb", "bomb.docx", docparsetest.ZipBomb(t, 4<<20), docparse.Options{MaxUncompressedBytes: 1 << 20}, docparse.ErrTooLarge, "zip bomb"},
		{"zip bomb with a lying header", "bomb.docx", docparsetest.LyingZipBomb(t), docparse.Options{}, docparse.ErrTooLarge, "zip bomb"},
		{"zip bomb within the size limit (a thousand times its size)", "bomb.docx", docparsetest.ZipBomb(t, 8<<20), docparse.Options{}, docparse.ErrTooLarge, "more than 500 times its size (a zip bomb?)"},
		{"part holding more than it declares", "lying.docx", docparsetest.UnderstatedZip(t), docparse.Options{}, docparse.ErrCorrupt, "declares 10 bytes but holds 12.0 KB"},
		{"XLSX sheet cut short by its header", "cut.xlsx", understatedSheet(t), docparse.Options{}, docparse.ErrCorrupt, "holds more than its declared size"},
		{"too many entries", "many.docx", docparsetest.Zip(t, append(manyEntries, [2]string{"word/document.xml", "<a/>"})...), docparse.Options{MaxEntries: 10}, docparse.ErrTooLarge, "parts"},
		{"DOCX that is a ZIP of something else", "report.docx", docparsetest.Zip(t, [2]string{"photos/cat.jpg", "meow"}), docparse.Options{}, docparse.ErrCorrupt, "ZIP archive of something else"},
		{"DOCX with broken XML", "broken.docx", docparsetest.Zip(t, [2]string{"word/document.xml", "<w:document><w:body"}), docparse.Options{}, docparse.ErrCorrupt, "damaged"},
		{"truncated DOCX", "cut.docx", docparsetest.DOCX(t, "x", docparsetest.Para{Text: "text"})[:200], docparse.Options{}, docparse.ErrCorrupt, "damaged"},
		{"password-protected DOCX", "locked.docx", append([]byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}, make([]byte, 512)...), docparse.Options{}, docparse.ErrEncrypted, "password"},
		{"legacy .doc", "old.doc", append([]byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}, make([]byte, 512)...), docparse.Options{}, docparse.ErrUnsupported, "legacy"},
		{"empty DOCX", "empty.docx", docparsetest.DOCX(t, ""), docparse.Options{}, docparse.ErrNoText, "no text"},
		{"CSV that is not UTF-8", "latin1.csv", []byte("name,city\nJos\xe9,M\xe1laga\n"), docparse.Options{}, docparse.ErrCorrupt, "UTF-8"},
		{"unknown format", "song.mp3", []byte("ID3\x03"), docparse.Options{}, docparse.ErrUnsupported, "unsupported"},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			doc, err := docparse.Parse(context.Background(), c.name, c.data, c.opts)
			if !errors.Is(err, c.want) || doc != nil {
				t.Fatalf("Parse = %v, %v; want %v", doc, err, c.want)
			}
			if !strings.Contains(err.Error(), c.message) {
				t.Fatalf("message %q does not say %q", err, c.message)
			}
		})
	}
}

// FuzzParse feeds damaged variants of every format: Parse must return a
// document or one of the sentinel errors, never panic or hang.
func FuzzParse(f *testing.F) {
	seeds := map[string][]byte{
		"a.pdf":  docparsetest.PDF(f, "Page one text.", "Page two text."),
		"z.pdf":  docparsetest.ChinesePDF(f, docparsetest.ChineseText[0]),
		"g.pdf":  fixture(f, "groff-manual.pdf"),
		"s.pdf":  fixture(f, "scanned.pdf"),
		"d.docx": docparsetest.DOCX(f, "T", docparsetest.Para{Level: 1, Text: "H"}, docparsetest.Para{Text: "body"}),
		"p.pptx": docparsetest.PPTX(f, docparsetest.Slide{Title: "T", Body: []string{"b"}}),
		"x.xlsx": docparsetest.XLSX(f, docparsetest.Sheet{Name: "S", Rows: [][]any{{"a", "b"}, {1, 2}}}),
		"c.csv":  []byte("a,b\n1,2\n"),
	}
	names := []string{"a.pdf", "z.pdf", "g.pdf", "s.pdf", "d.docx", "p.pptx", "x.xlsx", "c.csv"}
	for i, n := range names {
		f.Add(uint8(i), seeds[n])
	}
	sentinels := []error{docparse.ErrNoText, docparse.ErrEncrypted, docparse.ErrCorrupt, docparse.ErrUnsupported, docparse.ErrTooLarge}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		name := names[int(kind)%len(names)]
		doc, err := docparse.Parse(context.Background(), name, data, docparse.Options{MaxUncompressedBytes: 8 << 20})
		if err == nil {
			if doc == nil || strings.TrimSpace(doc.Text()) == "" {
				t.Fatalf("no error and no text: %+v", doc)
			}
			return
		}
		for _, s := range sentinels {
			if errors.Is(err, s) {
				return
			}
		}
		t.Fatalf("error of no known kind: %v", err)
	})
}

// BenchmarkParsePDF200Pages is the PDF throughput: pages/s on a
// 200-page text PDF written by fpdf.
func BenchmarkParsePDF200Pages(b *testing.B) {
	pages := make([]string, 200)
	for i := range pages {
		pages[i] = strings.Repeat("The harbour master logs every crossing, the tide and the weather at dawn. ", 40)
	}
	data := docparsetest.PDF(b, pages...)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		doc, err := docparse.Parse(context.Background(), "big.pdf", data, docparse.Options{})
		if err != nil || doc.Pages != 200 {
			b.Fatal(doc, err)
		}
	}
	b.ReportMetric(float64(200*b.N)/b.Elapsed().Seconds(), "pages/s")
}

// understatedSheet is a workbook whose sheet declares a third of its size,
// still more than it takes compressed: only unpacking it tells.
func understatedSheet(t *testing.T) []byte {
	rows := [][]any{{"Name", "Note"}}
	for i := range 3000 {
		rows = append(rows, []any{fmt.Sprintf("row %d", i), fmt.Sprintf("note number %d of the sheet", i*7919%10007)})
	}
	book := docparsetest.XLSX(t, docparsetest.Sheet{Name: "Notes", Rows: rows})
	zr, err := zip.NewReader(bytes.NewReader(book), int64(len(book)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == "xl/worksheets/sheet1.xml" {
			if f.UncompressedSize64/3 <= f.CompressedSize64*2 {
				t.Fatalf("sheet %d bytes from %d: not compressible enough for the test", f.UncompressedSize64, f.CompressedSize64)
			}
			return docparsetest.Understate(t, book, f.Name, f.UncompressedSize64/3)
		}
	}
	t.Fatal("no sheet1.xml in the workbook")
	return nil
}

// An image compresses as well as a bomb, but is never unpacked: a DOCX
// holding a plain bitmap is read.
func TestAPackageWithAHighlyCompressibleImageIsRead(t *testing.T) {
	base := docparsetest.DOCX(t, "Photo report", docparsetest.Para{Text: "The white wall photographed."})
	zr, err := zip.NewReader(bytes.NewReader(base), int64(len(base)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if err := w.Copy(f); err != nil {
			t.Fatal(err)
		}
	}
	fw, err := w.Create("word/media/image1.bmp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(bytes.Repeat([]byte{0xFF}, 3<<20)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	doc, err := docparse.Parse(context.Background(), "report.docx", buf.Bytes(), docparse.Options{})
	if err != nil || !strings.Contains(doc.Text(), "white wall") {
		t.Fatalf("Parse = %+v, %v", doc, err)
	}
}

// A sheet over excelize's in-memory size is unpacked to a temporary
// folder, which the parse removes.
func TestALargeSheetLeavesNoTemporaryFiles(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var sheet strings.Builder
	sheet.WriteString(`<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`)
	sheet.WriteString(`<row r="1"><c r="A1" t="inlineStr"><is><t>Item</t></is></c><c r="B1" t="inlineStr"><is><t>Remark</t></is></c></row>`)
	for r := 2; sheet.Len() < 17<<20; r++ {
		fmt.Fprintf(&sheet, `<row r="%d"><c r="A%d" t="inlineStr"><is><t>item %d</t></is></c><c r="B%d" t="inlineStr"><is><t>remark %d about the item</t></is></c></row>`,
			r, r, r, r, r*31%997)
	}
	sheet.WriteString(`</sheetData></worksheet>`)
	book := docparsetest.Zip(t,
		[2]string{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`},
		[2]string{"_rels/.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		[2]string{"xl/workbook.xml", `<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Stock" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		[2]string{"xl/_rels/workbook.xml.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`},
		[2]string{"xl/worksheets/sheet1.xml", sheet.String()},
	)
	doc, err := docparse.Parse(context.Background(), "stock.xlsx", book, docparse.Options{})
	if err != nil || len(doc.Sections) != 1 || doc.Sections[0].Header != "Item | Remark" {
		t.Fatalf("Parse: %v", err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil || len(left) != 0 {
		t.Fatalf("the parse left %v in the temporary folder (%v)", left, err)
	}
}

// What viewers open is read too: bytes after the last %%EOF, a PDF 2.0
// header, a header line that goes on after the version.
func TestAPDFWithTrailingBytesOrANewerHeaderIsRead(t *testing.T) {
	base := docparsetest.PDF(t, "The gyroscope needs calibration every spring.")
	v2 := bytes.Clone(base)
	copy(v2[5:8], "2.0")
	comment := bytes.Clone(base)
	comment[8] = ' '
	for what, data := range map[string][]byte{
		"bytes after %%EOF":             append(bytes.Clone(base), "\n% saved again by a mail gateway\n"...),
		"PDF 2.0 header":                v2,
		"header comment":                comment,
		"PDF 2.0 and bytes after %%EOF": append(bytes.Clone(v2), "\x00\x00\x00\n"...),
		// A gateway's lines before the header, the offsets counted from
		// the header (the file as written, then prefixed) or from the
		// start of the file (written after the lines).
		"lines before the header":          append([]byte("Content-Type: application/pdf\r\n\r\n"), base...),
		"lines before the header, counted": docparsetest.ObjectsPDF("Content-Type: application/pdf\r\n\r\n", gyroscopePage()...),
		"PDF 2.0 after a line":             append([]byte("Saved by the archive\n"), v2...),
		// A byte-order mark or a blank line the producer wrote itself,
		// counted by its offsets.
		"a byte-order mark, counted": docparsetest.ObjectsPDF("\xEF\xBB\xBF", gyroscopePage()...),
		"a blank line, counted":      docparsetest.ObjectsPDF("\r\n", gyroscopePage()...),
		// A mail part saved whole: its headers before, its boundary after.
		"a mail part": append(append([]byte("Content-Type: application/pdf\r\n\r\n"), base...), "\r\n--=_boundary_42--\r\n"...),
		"a mail part, counted": append(docparsetest.ObjectsPDF("Content-Type: application/pdf\r\n\r\n", gyroscopePage()...),
			"\r\n--=_boundary_42--\r\n"...),
	} {
		doc, err := docparse.Parse(context.Background(), "manual.pdf", data, docparse.Options{})
		if err != nil || !strings.Contains(doc.Text(), "gyroscope") {
			t.Errorf("%s: %v", what, err)
		}
	}
	// A file cut short inside an appended revision is damaged, not the
	// revision before it.
	cut := append(bytes.Clone(base), "\n99 0 obj\n<< /Length 500 >>\nstream\nBT /F1 12 Tf (half of an upd"...)
	if _, err := docparse.Parse(context.Background(), "manual.pdf", cut, docparse.Options{}); !errors.Is(err, docparse.ErrCorrupt) {
		t.Errorf("an update cut short: %v; want ErrCorrupt", err)
	}
}

// gyroscopePage is the objects of a one-page PDF about a gyroscope.
func gyroscopePage() []string {
	return onePage(docparsetest.Stream("", "BT /F1 12 Tf 72 712 Td (The gyroscope needs calibration.) Tj ET"), "")
}

// onePage is the objects of a one-page PDF (for docparsetest.ObjectsPDF)
// whose content stream is contents, its font F1 Helvetica, its
// annotations annots (an array or a reference to one, "" for none), and
// more objects numbered from 6.
func onePage(contents, annots string, more ...string) []string {
	if annots != "" {
		annots = "/Annots " + annots
	}
	return append([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> " + annots + " >>",
		contents,
		docparsetest.HelveticaObject,
	}, more...)
}

func TestAPDFsTurnedTextIsReadAsLines(t *testing.T) {
	t.Parallel()
	// A landscape table on a portrait page, as a word processor writes
	// it: text turned 90°, words kerned apart in pieces.
	data := docparsetest.FlatePDF(t, []byte(`BT /F1 12 Tf 0 1 -1 0 300 100 Tm 14 TL
[(Qu) 20 (arterly) -300 (rain) 10 (fall)] TJ T* [(by) -300 (dist) 15 (rict)] TJ ET
BT /F1 12 Tf 72 60 Td (An upright footnote.) Tj ET`))
	doc := parse(t, "report.pdf", data)
	want := "Quarterly rainfall\nby district\nAn upright footnote."
	if got := doc.Text(); got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
}

func TestChineseTableCellsOnALineStayApart(t *testing.T) {
	t.Parallel()
	// Chinese has no spaces between words, but two cells of a row are
	// two phrases: joined, they would make bigrams of neither.
	doc := parse(t, "rules.pdf", docparsetest.ChineseRowPDF(t, "图书馆", "借阅规则", "滞纳金"))
	if got, want := doc.Text(), "图书馆 借阅规则 滞纳金"; got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
}

func TestAPDFsAnnotationsCountAgainstItsBudget(t *testing.T) {
	t.Parallel()
	// One page listing one annotation 200,000 times (1.2 MB).
	data := docparsetest.ObjectsPDF("", onePage(
		docparsetest.Stream("", "BT /F1 12 Tf 72 712 Td (The page's own text.) Tj ET"),
		"7 0 R",
		docparsetest.Stream("/Type /XObject /Subtype /Form /BBox [0 0 150 20] /Resources << /Font << /F1 5 0 R >> >>",
			"BT /F1 10 Tf 2 5 Td (note) Tj ET"),
		"["+strings.Repeat("8 0 R ", 200_000)+"]",
		"<< /Type /Annot /Subtype /FreeText /Rect [72 400 300 420] /AP << /N 6 0 R >> >>",
	)...)
	// The operator budget of 1,000 bytes of text runs out.
	if _, err := docparse.Parse(context.Background(), "notes.pdf", data, docparse.Options{MaxTextBytes: 1000}); !errors.Is(err, docparse.ErrTextLimit) {
		t.Errorf("small budget: %v; want ErrTextLimit", err)
	}
	// Within the default one, only the first 20,000 are read.
	doc := parse(t, "notes.pdf", data)
	if n := strings.Count(doc.Text(), "note"); !strings.HasPrefix(doc.Text(), "The page's own text.") || n != 20_000 {
		t.Errorf("default budget: %d notes read, text starts %.40q", n, doc.Text())
	}
}

func TestAPDFsOperandsWithoutAnOperatorAreBounded(t *testing.T) {
	t.Parallel()
	// "1 1 1 …" with no operator: the interpreter would hold every number
	// (100 million of them, a 200 KB file, took 15 GB).
	bomb := docparsetest.FlatePDF(t, []byte("BT /F1 12 Tf 72 712 Td (before) Tj ET\n"+strings.Repeat("1 ", 300_000)+"Tj"))
	if _, err := docparse.Parse(context.Background(), "numbers.pdf", bomb, docparse.Options{}); !errors.Is(err, docparse.ErrTooLarge) {
		t.Errorf("a stream of numbers: %v; want ErrTooLarge", err)
	}
	// The same with a name the reader's interpreter looks up (PostScript's
	// def): each use pushes a value.
	defined := docparsetest.FlatePDF(t, []byte("1 dict begin /x 0 def\n"+strings.Repeat("x ", 300_000)+"Tj"))
	if _, err := docparse.Parse(context.Background(), "names.pdf", defined, docparse.Options{}); !errors.Is(err, docparse.ErrTooLarge) {
		t.Errorf("a stream of defined names: %v; want ErrTooLarge", err)
	}
	// Padding read a few bytes at a time (a deflate block every 31 bytes)
	// weighs on the budget as padding read at once.
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	pad := []byte(strings.Repeat(" ", 31))
	for range (2 << 20) / 31 {
		zw.Write(pad)
		zw.Flush()
	}
	zw.Write([]byte("BT /F1 12 Tf 72 712 Td (padded) Tj ET"))
	zw.Close()
	padded := docparsetest.ObjectsPDF("", onePage(docparsetest.Stream("/Filter /FlateDecode", z.String()), "")...)
	if _, err := docparse.Parse(context.Background(), "padded.pdf", padded, docparse.Options{MaxTextBytes: 4096}); !errors.Is(err, docparse.ErrTextLimit) {
		t.Errorf("padding in short blocks: %v; want ErrTextLimit", err)
	}
	// Names, strings, arrays and comments count as what they are: a page
	// with long arrays and strings holding operator-like words is read.
	page := "BT /F1 12 Tf 72 712 Td [" + strings.Repeat("(x) -20 ", 5000) + "] TJ ET\n" +
		"% a comment saying 1 2 3 Tj\n" +
		"BT /F1 12 Tf 72 690 Td (a string (with Tj and \\) inside) ) Tj <414243> Tj /Name1 /Name2 pop ET"
	doc := parse(t, "arrays.pdf", docparsetest.FlatePDF(t, []byte(page)))
	if !strings.Contains(doc.Text(), "a string (with Tj and ) inside)") {
		t.Errorf("text %.80q…", doc.Text())
	}
}

func TestAPDFsRightToLeftTextIsReadInReadingOrder(t *testing.T) {
	t.Parallel()
	// Drawn from left to right, as most producers do, or in the order
	// it is read.
	for _, inReadingOrder := range []bool{false, true} {
		doc := parse(t, "hours.pdf", docparsetest.HebrewPDF(t, inReadingOrder))
		if got := doc.Text(); got != docparsetest.HebrewText {
			t.Errorf("drawn in reading order %v: text %q, want %q", inReadingOrder, got, docparsetest.HebrewText)
		}
	}
}

func TestAPDFsFormValuesAndStampsAreRead(t *testing.T) {
	t.Parallel()
	appearance := func(text string) string {
		return docparsetest.Stream("/Type /XObject /Subtype /Form /BBox [0 0 150 20] /Resources << /Font << /F1 5 0 R >> >>",
			"/Tx BMC BT /F1 10 Tf 2 5 Td ("+text+") Tj ET EMC")
	}
	data := docparsetest.ObjectsPDF("", onePage(
		docparsetest.Stream("", "BT /F1 12 Tf 72 700 Td (Applicant name:) Tj 0 -30 Td (Approved:) Tj ET"),
		"[6 0 R 8 0 R 12 0 R 14 0 R 16 0 R 18 0 R 19 0 R 22 0 R 23 0 R 24 0 R 25 0 R]",
		// A filled text field, its appearance drawn into its rectangle.
		"<< /Type /Annot /Subtype /Widget /FT /Tx /Rect [180 690 330 710] /V (Marguerite Okafor) /AP << /N 7 0 R >> >>",
		appearance("Marguerite Okafor"),
		// A check box: the appearance of the state shown.
		"<< /Type /Annot /Subtype /Widget /FT /Btn /Rect [180 660 200 680] /AS /Off /AP << /N 9 0 R >> >>",
		"<< /Yes 10 0 R /Off 11 0 R >>",
		appearance("ticked"), appearance("unticked"),
		// A hidden annotation shows nothing.
		"<< /Type /Annot /Subtype /FreeText /F 2 /Rect [72 500 300 520] /AP << /N 13 0 R >> >>",
		appearance("hidden draft remark"),
		// A stamp.
		"<< /Type /Annot /Subtype /Stamp /Rect [400 700 550 740] /AP << /N 15 0 R >> >>",
		appearance("RECEIVED 3 MARCH"),
		// A damaged one costs its own text only: its appearance, or the
		// annotation itself.
		"<< /Type /Annot /Subtype /FreeText /Rect [72 400 300 420] /AP << /N 17 0 R >> >>",
		"<< /Type /XObject /Subtype /Form /BBox [0 0 150 20] /Filter /LZWDecode /Length 4 >>\nstream\nabcd\nendstream",
		"<< /Type /Annot /Subtype /Link /Rect [72 400 300 420] /Border [0 0 0] ) >>",
		// Acrobat's check box: ZapfDingbats' 4, a check mark.
		"<< /Type /Annot /Subtype /Widget /FT /Btn /Rect [180 600 200 620] /AS /Yes /AP << /N << /Yes 21 0 R >> >> >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /ZapfDingbats >>",
		docparsetest.Stream("/Type /XObject /Subtype /Form /BBox [0 0 20 20] /Resources << /Font << /ZaDb 20 0 R >> >>",
			"/Tx BMC BT /ZaDb 12 Tf 4 5 Td (4) Tj ET EMC"),
		// Not shown either: Hidden written as a real, Invisible on a
		// type that is not standard, no area, an appearance that is
		// not a form.
		"<< /Type /Annot /Subtype /FreeText /F 2.0 /Rect [72 300 300 320] /AP << /N 13 0 R >> >>",
		"<< /Type /Annot /Subtype /FooBar /F 1 /Rect [72 300 300 320] /AP << /N 13 0 R >> >>",
		"<< /Type /Annot /Subtype /FreeText /Rect [100 100 100 100] /AP << /N 13 0 R >> >>",
		"<< /Type /Annot /Subtype /FreeText /Rect [72 300 300 320] /AP << /N 26 0 R >> >>",
		docparsetest.Stream("/Type /XObject /Subtype /Image /Width 1 /Height 1 /BBox [0 0 150 20] /Resources << /Font << /F1 5 0 R >> >>",
			"BT /F1 10 Tf 2 5 Td (hidden image bytes) Tj ET"),
	)...)
	doc := parse(t, "application.pdf", data)
	text := doc.Text()
	for _, want := range []string{"Applicant name:", "Marguerite Okafor", "unticked", "RECEIVED 3 MARCH", "\n✔"} {
		if !strings.Contains(text, want) {
			t.Errorf("text %q lacks %q", text, want)
		}
	}
	if strings.Contains(text, "hidden") || slices.Contains(strings.Fields(text), "ticked") {
		t.Errorf("text %q shows a hidden annotation or a state not shown", text)
	}
}

// withoutPart is the ZIP package pkg without the part named name.
func withoutPart(t *testing.T, pkg []byte, name string) []byte {
	t.Helper()
	found := false
	out := docparsetest.MapParts(t, pkg, func(part string, data []byte) (string, []byte) {
		if part == name {
			found = true
			return part, nil
		}
		return part, data
	})
	if !found {
		t.Fatalf("the package has no part %s", name)
	}
	return out
}

// A small file that unpacks to more text than Options.MaxTextBytes is
// refused as soon as it passes it, whatever the format: a PDF page whose
// deflated stream repeats a text operator (600 KB holding 200 MB did take
// 11 GB of memory), a Word body, a slide deck, a workbook.
func TestParseStopsAtTheTextLimit(t *testing.T) {
	t.Parallel()
	const limit = 256 << 10
	opts := docparse.Options{MaxTextBytes: limit}
	line := "BT /F1 12 Tf 72 712 Td (bomb word here) Tj ET\n"
	words := strings.Repeat("gravel ", 10000) // 70 KB a paragraph, slide or cell
	for name, data := range map[string][]byte{
		"bomb.pdf":  docparsetest.FlatePDF(t, []byte(strings.Repeat(line, 2*limit/len("bomb word here")))),
		"bomb.docx": docparsetest.DOCX(t, "", docparsetest.Para{Text: words}, docparsetest.Para{Text: words}, docparsetest.Para{Text: words}, docparsetest.Para{Text: words}),
		"bomb.pptx": docparsetest.PPTX(t, docparsetest.Slide{Title: "a", Body: []string{words}}, docparsetest.Slide{Title: "b", Body: []string{words}},
			docparsetest.Slide{Title: "c", Body: []string{words}}, docparsetest.Slide{Title: "d", Body: []string{words}}),
		"bomb.xlsx": docparsetest.XLSX(t, docparsetest.Sheet{Name: "S", Rows: sheetRows(12, strings.Repeat("gravel ", 4000))}),
	} {
		_, err := docparse.Parse(context.Background(), name, data, opts)
		if !errors.Is(err, docparse.ErrTextLimit) || !errors.Is(err, docparse.ErrTooLarge) || !strings.Contains(err.Error(), "more than 262.1 KB of text") {
			t.Errorf("%s: err = %v; want ErrTextLimit (an ErrTooLarge) naming the limit", name, err)
		}
		if _, err := docparse.Parse(context.Background(), name, data, docparse.Options{}); err != nil {
			t.Errorf("%s under the default limit: %v", name, err)
		}
	}
	// One page alone may not show more than a million characters.
	_, err := docparse.Parse(context.Background(), "page.pdf", docparsetest.PageBombPDF(t), docparse.Options{})
	if !errors.Is(err, docparse.ErrTooLarge) || errors.Is(err, docparse.ErrTextLimit) || !strings.Contains(err.Error(), "a page of the file shows more than") {
		t.Errorf("a page of over a million characters: err = %v", err)
	}
}

// sheetRows is a header and n rows of one cell holding text (a cell holds
// at most 32,767 characters).
func sheetRows(n int, text string) [][]any {
	rows := [][]any{{"h"}}
	for range n {
		rows = append(rows, []any{text})
	}
	return rows
}

// A column no row uses is left out: a cell in column XFD (16,384) wrote
// every empty cell before it, 16,382 " | " a row (a 23 KB workbook read
// as 98 MB of text).
func TestParseSpreadsheetsLeaveOutEmptyColumns(t *testing.T) {
	t.Parallel()
	f := excelize.NewFile()
	defer f.Close()
	for r := 1; r <= 200; r++ {
		_ = f.SetCellValue("Sheet1", fmt.Sprintf("A%d", r), fmt.Sprintf("w%d", r))
		_ = f.SetCellValue("Sheet1", fmt.Sprintf("XFD%d", r), "z")
		if r%2 == 0 {
			_ = f.SetCellValue("Sheet1", fmt.Sprintf("C%d", r), "c")
		}
	}
	buf, err := f.WriteToBuffer()
	if err != nil {
		t.Fatal(err)
	}
	doc := parse(t, "wide.xlsx", buf.Bytes())
	if len(doc.Sections) != 1 || doc.Sections[0].Header != "w1 |  | z" || !strings.HasPrefix(doc.Sections[0].Text, "w2 | c | z\nw3 |  | z\n") {
		t.Fatalf("sections %+v", doc.Sections)
	}
	if n := len(doc.Text()); n > 3000 {
		t.Errorf("%d bytes of text for 200 rows of three cells", n)
	}
}

// The budget also holds for what a sheet costs beyond its text: the
// separators of a sheet whose row r holds one cell, in column r (every
// column used), and the cell slots of rows reaching column XFD.
func TestParseSpreadsheetsCountWhatTheyCostAgainstTheTextLimit(t *testing.T) {
	t.Parallel()
	opts := docparse.Options{MaxTextBytes: 64 << 10}
	diagonal := excelize.NewFile()
	defer diagonal.Close()
	for r := 1; r <= 400; r++ {
		cell, _ := excelize.CoordinatesToCellName(r, r)
		_ = diagonal.SetCellValue("Sheet1", cell, "d")
	}
	wide := excelize.NewFile()
	defer wide.Close()
	for r := 1; r <= 20; r++ {
		_ = wide.SetCellValue("Sheet1", fmt.Sprintf("A%d", r), "w")
		_ = wide.SetCellValue("Sheet1", fmt.Sprintf("XFD%d", r), "z")
	}
	for name, f := range map[string]*excelize.File{"diagonal.xlsx": diagonal, "wide.xlsx": wide} {
		buf, err := f.WriteToBuffer()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := docparse.Parse(context.Background(), name, buf.Bytes(), opts); !errors.Is(err, docparse.ErrTooLarge) {
			t.Errorf("%s: err = %v; want ErrTooLarge", name, err)
		}
		if _, err := docparse.Parse(context.Background(), name, buf.Bytes(), docparse.Options{}); err != nil {
			t.Errorf("%s under the default limit: %v", name, err)
		}
	}
}

// Reading a workbook's cells never unpacks its media: a 100 MB image of
// zeros in a small workbook (under every size limit, and no XML part for
// the zip-bomb check) was held in memory whole by excelize.
func TestAWorkbooksMediaIsNotUnpacked(t *testing.T) {
	book := docparsetest.XLSX(t, docparsetest.Sheet{Name: "Fleet", Rows: [][]any{{"Ship", "Port"}, {"Kestrel", "Brest"}}})
	data := docparsetest.WithPart(t, book, "xl/media/image1.png", make([]byte, 100<<20))
	if len(data) > 256<<10 {
		t.Fatalf("the workbook is %d bytes; the test wants a small file", len(data))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	doc, err := docparse.Parse(context.Background(), "fleet.xlsx", data, docparse.Options{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if !strings.Contains(doc.Text(), "Kestrel | Brest") {
		t.Fatalf("text %q", doc.Text())
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 32<<20 {
		t.Errorf("reading the workbook allocated %d MB: its image was unpacked", allocated>>20)
	}
}

// What a workbook reads cells from is kept whatever its name: a sheet
// part named .bin beside an image (which is left out) still reads.
func TestAWorkbookSheetUnderAnotherNameIsReadBesideItsMedia(t *testing.T) {
	book := docparsetest.XLSX(t, docparsetest.Sheet{Name: "Fleet", Rows: [][]any{{"Ship", "Port"}, {"Kestrel", "Brest"}}})
	book = docparsetest.RenamePart(t, book, "xl/worksheets/sheet1.xml", "xl/worksheets/sheet1.bin")
	data := docparsetest.WithPart(t, book, "xl/media/image1.png", make([]byte, 1<<20))
	doc, err := docparse.Parse(context.Background(), "fleet.xlsx", data, docparse.Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if !strings.Contains(doc.Text(), "Kestrel | Brest") {
		t.Fatalf("text %q", doc.Text())
	}
}

// A part a parser reads is checked whatever its name: a relationship may
// point a slide at a .bin part, which the package-wide check (XML parts)
// leaves alone.
func TestAPartReadUnderAnotherNameIsCheckedAsAZipBomb(t *testing.T) {
	deck := docparsetest.PPTX(t, docparsetest.Slide{Title: "Harbour", Body: []string{"The breakwater is long."}})
	deck = docparsetest.RenamePart(t, deck, "ppt/slides/slide1.xml", "ppt/slides/slide1.bin")
	zr, err := zip.NewReader(bytes.NewReader(deck), int64(len(deck)))
	if err != nil {
		t.Fatal(err)
	}
	var parts [][2]string
	for _, f := range zr.File {
		if f.Name == "ppt/slides/slide1.bin" {
			continue // replaced below
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		parts = append(parts, [2]string{f.Name, string(b)})
	}
	bomb := `<p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main">` + strings.Repeat(" ", 16<<20) + `</p:sld>`
	data := docparsetest.WithPart(t, docparsetest.Zip(t, parts...), "ppt/slides/slide1.bin", []byte(bomb))
	_, err = docparse.Parse(context.Background(), "deck.pptx", data, docparse.Options{})
	if !errors.Is(err, docparse.ErrTooLarge) || !strings.Contains(err.Error(), "slide1.bin") {
		t.Fatalf("Parse = %v; want ErrTooLarge naming slide1.bin", err)
	}
}

// Drawing shows no text but takes time to parse: a PDF's operators are
// bounded with its text (8 per byte of MaxTextBytes), so that a request
// answered at once can hand a page of millions of path operators to the
// background.
func TestAPDFsDrawingOperatorsAreBoundedWithItsText(t *testing.T) {
	t.Parallel()
	content := "BT /F1 12 Tf 72 712 Td (harbour chart) Tj ET\n" + strings.Repeat("0 0 m 1 1 l S\n", 4000)
	data := docparsetest.FlatePDF(t, []byte(content))
	_, err := docparse.Parse(context.Background(), "chart.pdf", data, docparse.Options{MaxTextBytes: 1 << 10})
	if !errors.Is(err, docparse.ErrTextLimit) || !strings.Contains(err.Error(), "more than 8192 drawing operations") {
		t.Fatalf("err = %v; want ErrTextLimit naming 8192 drawing operations", err)
	}
	if doc, err := docparse.Parse(context.Background(), "chart.pdf", data, docparse.Options{}); err != nil || !strings.Contains(doc.Text(), "harbour chart") {
		t.Fatalf("under the default limit: %v", err)
	}
}

// A package naming one part twice is refused: what the checks read and
// what a reader takes could be different copies (a bomb first, a small
// sheet last).
func TestAPackageWithAPartTwiceIsRefused(t *testing.T) {
	book := docparsetest.XLSX(t, docparsetest.Sheet{Name: "Fleet", Rows: [][]any{{"Ship", "Port"}, {"Kestrel", "Brest"}}})
	data := docparsetest.WithPart(t, book, "xl/worksheets/sheet1.xml", []byte("<worksheet/>"))
	_, err := docparse.Parse(context.Background(), "fleet.xlsx", data, docparse.Options{})
	if !errors.Is(err, docparse.ErrCorrupt) || !strings.Contains(err.Error(), "xl/worksheets/sheet1.xml twice") {
		t.Fatalf("Parse = %v; want ErrCorrupt naming the part held twice", err)
	}
}

// A PDF whose streams are compressed with LZW (PDF 1.0's filter, which
// the reader does not implement) is read from a copy pdfcpu recompresses,
// with either code-width change, pages and page numbers kept. The pages
// are long enough for the codes to grow to 12 bits and the table to be
// cleared.
func TestParsePDFReadsLZWCompressedStreams(t *testing.T) {
	t.Parallel()
	words := strings.Fields("lantern harbour quay ledger beacon tide rope anchor gull pier mast keel hull sail wind fog")
	page := func(n int) string {
		var b strings.Builder
		for i := range 900 {
			b.WriteString(words[(i*i+n*7+i/3)%len(words)])
			b.WriteByte(' ')
		}
		return fmt.Sprintf("Page %d opens. %s", n, b.String())
	}
	pages := []string{page(1), page(2), page(3) + "The keeper logs the third bell."}
	for _, early := range []bool{true, false} {
		t.Run(fmt.Sprintf("EarlyChange=%v", early), func(t *testing.T) {
			t.Parallel()
			doc := parse(t, "old.pdf", docparsetest.LZWPDF(t, early, pages...))
			if doc.Pages != 3 || len(doc.Sections) != 3 {
				t.Fatalf("%d pages, sections %+v", doc.Pages, doc.Sections)
			}
			if p := pageOf(doc, "The keeper logs the third bell."); p != 3 {
				t.Fatalf("the phrase of page 3 is on page %d", p)
			}
			for i, s := range doc.Sections {
				if got, want := strings.Join(strings.Fields(s.Text), " "), strings.TrimSpace(pages[i]); got != want {
					t.Fatalf("page %d: %d bytes, want %d: %.80q…", i+1, len(got), len(want), got)
				}
			}
		})
	}
}

// A file that merely names LZW (an LZW image, a comment) while its
// text is in streams the reader reads is read alike through the copy,
// also when its fonts and pages are packed in object streams (which
// pdfcpu keeps unparsed until asked: written as they were read, the copy
// lost their references).
func TestAPDFNamingLZWIsReadAsWithout(t *testing.T) {
	t.Parallel()
	for name, pdf := range map[string][]byte{
		"classic":                 docparsetest.PDF(t, "The harbour master rings at noon.", "Boats leave on the ebb tide."),
		"object streams":          docparsetest.WithObjectStreams(t, docparsetest.PDF(t, "The harbour master rings at noon.", "Boats leave on the ebb tide.")),
		"Chinese, object streams": docparsetest.WithObjectStreams(t, docparsetest.ChinesePDF(t, "港口每天中午鸣钟。", "船只在退潮时离港。")),
	} {
		want := parse(t, name+".pdf", pdf)
		got := parse(t, name+".pdf", append(slices.Clip(pdf), "\n% an image here is /LZWDecode\n"...))
		if got.Text() != want.Text() || got.Pages != want.Pages {
			t.Errorf("%s: read through the copy %d pages %q, as it is %d pages %q", name, got.Pages, got.Text(), want.Pages, want.Text())
		}
	}
}

// A file whose cross-reference stream (PDF 1.5) is compressed with LZW,
// which the reader cannot even open, is read through the copy.
func TestAPDFWithAnLZWCrossReferenceStreamIsRead(t *testing.T) {
	t.Parallel()
	objs := onePage(docparsetest.Stream("", "BT /F1 12 Tf 72 700 Td (Moorings are let by the year.) Tj ET"), "")
	var b bytes.Buffer
	b.WriteString("%PDF-1.5\n")
	offsets := make([]int, len(objs)+1)
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	offsets[len(objs)] = b.Len() // the cross-reference stream itself
	entries := []byte{0, 0, 0, 0, 0, 0xff}
	for _, off := range offsets {
		entries = append(entries, 1, byte(off>>24), byte(off>>16), byte(off>>8), byte(off), 0)
	}
	z := docparsetest.LZW(t, entries)
	fmt.Fprintf(&b, "%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 1] /Root 1 0 R /Filter /LZWDecode /DecodeParms << /EarlyChange 0 >> /Length %d >>\nstream\n",
		len(objs)+1, len(objs)+2, len(z))
	b.Write(z)
	fmt.Fprintf(&b, "\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n", offsets[len(objs)])
	doc := parse(t, "moorings.pdf", b.Bytes())
	if !strings.Contains(doc.Text(), "Moorings are let by the year.") {
		t.Fatalf("text %q", doc.Text())
	}
}

// Many LZW streams, each decoding to the per-stream bound, cannot make
// the copy decode more than its overall bound (64 MiB): the file is read
// (its text is in a plain stream) within bounded memory. Not parallel,
// so that the count is this parse's.
func TestManyLZWStreamsAreDecodedWithinOneBudget(t *testing.T) {
	z := docparsetest.LZW(t, make([]byte, 16<<20))
	objs := onePage(docparsetest.Stream("", "BT /F1 12 Tf 72 700 Td (The tide turns at four.) Tj ET"), "")
	for range 24 { // 384 MiB if each were decoded
		objs = append(objs, lzwStream(z))
	}
	data := docparsetest.ObjectsPDF("", objs...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	doc := parse(t, "many.pdf", data)
	runtime.ReadMemStats(&after)
	if !strings.Contains(doc.Text(), "The tide turns at four.") {
		t.Fatalf("text %q", doc.Text())
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > allocScale*320<<20 {
		t.Fatalf("parsing a %d-byte file allocated %d MiB", len(data), n>>20)
	}
}

// lzwStream is a stream object of z, compressed by docparsetest.LZW.
func lzwStream(z []byte) string {
	return fmt.Sprintf("<< /Filter /LZWDecode /DecodeParms << /EarlyChange 0 >> /Length %d >>\nstream\n", len(z)) + string(z) + "\nendstream"
}

// An LZW stream that would decode to far more than a page's text is not
// decoded to the end: the file is refused as damaged, and parsing it
// allocates a bounded amount. Not parallel, so that the count is this
// parse's.
func TestAnLZWBombIsRefusedWithinBoundedMemory(t *testing.T) {
	data := docparsetest.ObjectsPDF("", onePage(lzwStream(docparsetest.LZW(t, make([]byte, 200<<20))), "")...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := docparse.Parse(context.Background(), "bomb.pdf", data, docparse.Options{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, docparse.ErrCorrupt) {
		t.Fatalf("Parse of a %d-byte file decoding to 200 MiB: %v, want ErrCorrupt", len(data), err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > allocScale*96<<20 {
		t.Fatalf("parsing a %d-byte file allocated %d MiB", len(data), n>>20)
	}
}
