// Package docparsetest builds documents for tests: PDFs written with
// github.com/go-pdf/fpdf (Latin core fonts, and Chinese through a subset
// of Droid Sans Fallback), image-only and encrypted PDFs, and DOCX, PPTX
// and XLSX packages, plus the hostile files uploads must refuse.
package docparsetest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/lzw"
	"compress/zlib"
	_ "embed"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"path"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/filter"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// chineseFont is a subset of Droid Sans Fallback (Apache License 2.0, see
// fonts/NOTICE) holding the glyphs of the Chinese test texts.
//
//go:embed fonts/droid-sans-fallback-subset.ttf
var chineseFont []byte

// ChineseText is what the subset font can write, page by page.
var ChineseText = []string{
	"第一页：图书馆借阅规则简介。",
	"第二页：读者证在服务台办理。",
	"第三页：逾期归还的图书每天收取五角滞纳金。",
}

// hebrewFont is a subset of DejaVu Sans (see fonts/NOTICE) holding the
// glyphs of HebrewText.
//
//go:embed fonts/dejavu-sans-hebrew-subset.ttf
var hebrewFont []byte

// HebrewText is a Hebrew sentence ("The library is open until 8 in the
// evening.") in the order it is read, and HebrewSeen the same in the
// order its glyphs stand on the line from left to right, as most
// producers draw right-to-left text.
const (
	HebrewText = "הספרייה פתוחה עד השעה 8 בערב."
	HebrewSeen = ".ברעב 8 העשה דע החותפ היירפסה"
)

// HebrewPDF is a one-page PDF showing HebrewText in an embedded font,
// drawn from left to right (HebrewSeen) or, with inReadingOrder, glyph
// by glyph from right to left in the order it is read.
func HebrewPDF(t testing.TB, inReadingOrder bool) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.AddUTF8FontFromBytes("dejavu", "", hebrewFont)
	f.SetFont("dejavu", "", 14)
	f.AddPage()
	if !inReadingOrder {
		f.MultiCell(0, 8, HebrewSeen, "", "R", false)
		return output(t, f)
	}
	x := 190.0
	for _, r := range HebrewText {
		x -= f.GetStringWidth(string(r))
		f.Text(x, 30, string(r))
	}
	return output(t, f)
}

// PDF writes one page per string in Helvetica.
func PDF(t testing.TB, pages ...string) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetTitle("Generated test document", true)
	f.SetFont("Helvetica", "", 12)
	for _, p := range pages {
		f.AddPage()
		f.MultiCell(0, 6, p, "", "L", false)
	}
	return output(t, f)
}

// ChinesePDF writes one page per string in the embedded Chinese font;
// the strings may use only the characters of ChineseText.
func ChinesePDF(t testing.TB, pages ...string) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.AddUTF8FontFromBytes("droid", "", chineseFont)
	f.SetFont("droid", "", 14)
	for _, p := range pages {
		f.AddPage()
		f.MultiCell(0, 8, p, "", "L", false)
	}
	return output(t, f)
}

// ChineseRowPDF writes cells on one line of one page, 50 mm apart, as a
// table's row; the cells may use only the characters of ChineseText.
func ChineseRowPDF(t testing.TB, cells ...string) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.AddUTF8FontFromBytes("droid", "", chineseFont)
	f.SetFont("droid", "", 14)
	f.AddPage()
	for i, c := range cells {
		f.Text(20+50*float64(i), 30, c)
	}
	return output(t, f)
}

// ScannedPDF has pages that are images only: no text layer.
func ScannedPDF(t testing.TB, pages int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 64, 64))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	img.Set(3, 3, color.White)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	f := fpdf.New("P", "mm", "A4", "")
	f.RegisterImageOptionsReader("scan", fpdf.ImageOptions{ImageType: "PNG"}, bytes.NewReader(buf.Bytes()))
	for range pages {
		f.AddPage()
		f.ImageOptions("scan", 10, 10, 150, 150, false, fpdf.ImageOptions{ImageType: "PNG"}, 0, "")
	}
	return output(t, f)
}

// EncryptedPDF is a PDF that needs a password to open.
func EncryptedPDF(t testing.TB, text string) []byte {
	t.Helper()
	return protectedPDF(t, text, "user-secret")
}

// OwnerProtectedPDF is text in a PDF with an empty user password and an
// owner password that forbids all but printing (40-bit RC4): every
// viewer opens it without asking.
func OwnerProtectedPDF(t testing.TB, text string) []byte {
	t.Helper()
	return protectedPDF(t, text, "")
}

// protectedPDF is text in a PDF that fpdf encrypts (40-bit RC4) with
// the user password user and an owner password, printing allowed.
func protectedPDF(t testing.TB, text, user string) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetProtection(fpdf.CnProtectPrint, user, "owner-secret")
	f.SetFont("Helvetica", "", 12)
	f.AddPage()
	f.MultiCell(0, 6, text, "", "L", false)
	return output(t, f)
}

func output(t testing.TB, f *fpdf.Fpdf) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		t.Fatalf("write test PDF: %v", err)
	}
	return buf.Bytes()
}

// Zip packs files (name → content) in the given order.
func Zip(t testing.TB, files ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, f := range files {
		fw, err := w.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ZipBomb is a DOCX-looking package whose one entry inflates to size
// bytes of zeros: small on the wire, huge unpacked.
func ZipBomb(t testing.TB, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	fw, err := w.Create("word/document.xml")
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for left := size; left > 0; left -= len(zeros) {
		if _, err := fw.Write(zeros[:min(left, len(zeros))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// LyingZipBomb is a DOCX-looking package whose header declares a
// terabyte-sized entry: refused before anything is inflated.
func LyingZipBomb(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	fw, err := w.CreateRaw(&zip.FileHeader{Name: "word/document.xml", Method: zip.Store,
		CompressedSize64: 5, UncompressedSize64: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write([]byte("<a/>\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// UnderstatedZip is a DOCX-looking package whose document part declares
// far fewer bytes than it holds: a header that lies the other way.
func UnderstatedZip(t testing.TB) []byte {
	t.Helper()
	body := bytes.Repeat([]byte("<w:p/>"), 2000)
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	fw, err := w.CreateRaw(&zip.FileHeader{Name: "word/document.xml", Method: zip.Store,
		CompressedSize64: uint64(len(body)), UncompressedSize64: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Understate copies a ZIP package with one part's header declaring
// declared bytes instead of its real size (its data and checksum kept): a
// header that lies without looking like it does.
func Understate(t testing.TB, pkg []byte, part string, declared uint64) []byte {
	t.Helper()
	return rewrite(t, pkg, nil, func(w *zip.Writer, f *zip.File) error {
		raw, err := f.OpenRaw()
		if err != nil {
			return err
		}
		h := f.FileHeader
		if f.Name == part {
			h.UncompressedSize64 = declared
		}
		fw, err := w.CreateRaw(&h)
		if err == nil {
			_, err = io.Copy(fw, raw)
		}
		return err
	})
}

// rewrite is the ZIP package pkg written again part by part by each,
// which writes f's part (or none) to w; then, if given, by last.
func rewrite(t testing.TB, pkg []byte, last func(w *zip.Writer) error, each func(w *zip.Writer, f *zip.File) error) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(pkg), int64(len(pkg)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	w.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.BestCompression)
	})
	for _, f := range zr.File {
		if err := each(w, f); err != nil {
			t.Fatal(err)
		}
	}
	if last != nil {
		err = last(w)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// MapParts is the ZIP package pkg with each part named and holding what
// f makes of its name and content, in the same order; a part f gives no
// content for (nil) is left out.
func MapParts(t testing.TB, pkg []byte, f func(name string, data []byte) (string, []byte)) []byte {
	t.Helper()
	return rewrite(t, pkg, nil, func(w *zip.Writer, e *zip.File) error {
		rc, err := e.Open()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		name, data := f(e.Name, data)
		if data == nil {
			return nil
		}
		fw, err := w.Create(name)
		if err == nil {
			_, err = fw.Write(data)
		}
		return err
	})
}

// FlatePDF is a one-page PDF whose content stream, deflated as a bomb's
// would be, is content (text operators in Helvetica).
func FlatePDF(t testing.TB, content []byte) []byte {
	t.Helper()
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	if _, err := zw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return ObjectsPDF("",
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n", z.Len())+z.String()+"\nendstream",
		HelveticaObject,
	)
}

// LZW is data compressed with LZW as Go's compress/lzw writes it, which
// is PDF's LZW with /DecodeParms << /EarlyChange 0 >>.
func LZW(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := lzw.NewWriter(&b, lzw.MSB, 8)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// LZWPDF is a PDF of one page per text (Helvetica, one line each),
// every content stream compressed with LZW, the filter of PDF 1.0 and
// 1.1, as old producers and some scanners still write it: with the PDF
// default code-width change (EarlyChange 1, encoded by pdfcpu) when
// early, else with EarlyChange 0 (encoded by Go's compress/lzw, which
// is that variant). Its page tree also holds an LZW image that is no
// text.
func LZWPDF(t testing.TB, early bool, pages ...string) []byte {
	t.Helper()
	encode := func(content string) []byte {
		var b bytes.Buffer
		if early {
			f, err := filter.NewFilter(filter.LZW, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := f.Encode(strings.NewReader(content))
			if err == nil {
				_, err = b.ReadFrom(r)
			}
			if err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}
		return LZW(t, []byte(content))
	}
	parms := ""
	if !early {
		parms = " /DecodeParms << /EarlyChange 0 >>"
	}
	n := len(pages)
	kids := make([]string, n)
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "", HelveticaObject,
		"<< /Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /LZWDecode" + parms +
			fmt.Sprintf(" /Length %d >>\nstream\n", len(encode(strings.Repeat("\x80", 64)))) + string(encode(strings.Repeat("\x80", 64))) + "\nendstream"}
	for i, text := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", len(objs)+1)
		objs = append(objs, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /Font << /F1 3 0 R >> /XObject << /Im1 4 0 R >> >> >>", len(objs)+2))
		z := encode("q 8 0 0 8 500 700 cm /Im1 Do Q BT /F1 12 Tf 72 700 Td (" + text + ") Tj ET")
		objs = append(objs, fmt.Sprintf("<< /Filter /LZWDecode%s /Length %d >>\nstream\n", parms, len(z))+string(z)+"\nendstream")
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n)
	return ObjectsPDF("", objs...)
}

// WithObjectStreams is pdf rewritten by pdfcpu as PDF 1.5 and later
// producers write: most objects (fonts, pages) packed into compressed
// object streams, found through a cross-reference stream.
func WithObjectStreams(t testing.TB, pdf []byte) []byte {
	t.Helper()
	// pdfcpu's model.ConfigPath is set once, by docparse's init: written
	// here it would race with the parses of parallel tests.
	conf := model.NewDefaultConfiguration()
	conf.WriteObjectStream, conf.WriteXRefStream = true, true
	var out bytes.Buffer
	if err := api.Optimize(bytes.NewReader(pdf), &out, conf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte("/ObjStm")) {
		t.Fatal("pdfcpu wrote no object stream")
	}
	return out.Bytes()
}

// FormPDF is a one-page PDF form whose page says label and whose text
// field, next to it, is filled with value (shown by the field's
// appearance, as a viewer saves a filled form).
func FormPDF(label, value string) []byte {
	return ObjectsPDF("",
		"<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields [6 0 R] >> >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> /Annots [6 0 R] >>",
		Stream("", "BT /F1 12 Tf 72 700 Td ("+label+") Tj ET"),
		HelveticaObject,
		"<< /Type /Annot /Subtype /Widget /FT /Tx /T (field) /Rect [250 690 500 710] /V ("+value+") /AP << /N 7 0 R >> >>",
		Stream("/Type /XObject /Subtype /Form /BBox [0 0 250 20] /Resources << /Font << /F1 5 0 R >> >>",
			"/Tx BMC BT /F1 10 Tf 2 5 Td ("+value+") Tj ET EMC"),
	)
}

// BlankFirstPagePDF is a two-page PDF whose first page is blank, with no
// content stream (as some producers write a blank page), and whose
// second shows text.
func BlankFirstPagePDF(text string) []byte {
	return ObjectsPDF("",
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R /Resources << /Font << /F1 6 0 R >> >> >>",
		Stream("", "BT /F1 12 Tf 72 700 Td ("+text+") Tj ET"),
		HelveticaObject)
}

// HelveticaObject is a font object of PDF's standard Helvetica.
const HelveticaObject = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"

// ObjectsPDF is a PDF of objs, numbered from 1, the first the catalog,
// with a cross-reference table. prefix comes before its header, and the
// table's offsets count it, as a producer writing after it would.
func ObjectsPDF(prefix string, objs ...string) []byte {
	var b bytes.Buffer
	b.WriteString(prefix)
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// Stream is a PDF stream object of content, dict's entries besides its
// length.
func Stream(dict, content string) string {
	return fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(content), content)
}

// PageBombPDF is a PDF of about 100 KB whose one page's stream inflates
// to 25 MB of text operators showing more than a million characters.
func PageBombPDF(t testing.TB) []byte {
	t.Helper()
	line := "BT /F1 12 Tf 72 712 Td (bomb word here) Tj ET\n"
	return FlatePDF(t, []byte(strings.Repeat(line, (1<<20)/len("bomb word here")+1)))
}

// WithPart is the ZIP package pkg with one more entry, name holding
// content, deflated at the best compression (so that a part of zeros is
// small on the wire).
func WithPart(t testing.TB, pkg []byte, name string, content []byte) []byte {
	t.Helper()
	return rewrite(t, pkg, func(w *zip.Writer) error {
		fw, err := w.Create(name)
		if err == nil {
			_, err = fw.Write(content)
		}
		return err
	}, func(w *zip.Writer, f *zip.File) error { return w.Copy(f) })
}

// RenamePart is the package pkg with its part from renamed to to, and the
// relationships and content types that name it (by its base name) changed
// to match: a valid package whose part has an unusual name.
func RenamePart(t testing.TB, pkg []byte, from, to string) []byte {
	t.Helper()
	return MapParts(t, pkg, func(name string, data []byte) (string, []byte) {
		switch {
		case name == from:
			return to, data
		case strings.HasSuffix(name, ".rels") || name == "[Content_Types].xml":
			return name, []byte(strings.ReplaceAll(string(data), path.Base(from), path.Base(to)))
		}
		return name, data
	})
}

// LoopingXrefPDF is a one-page PDF showing text whose trailer names its
// own cross-reference table as the one before it (/Prev): a reader with
// no memory of the sections it read follows it forever.
func LoopingXrefPDF(text string) []byte {
	pdf := ObjectsPDF("",
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		Stream("", "BT /F1 12 Tf 72 712 Td ("+text+") Tj ET"),
		HelveticaObject)
	xref := bytes.LastIndex(pdf, []byte("\nxref\n")) + 1
	return bytes.Replace(pdf, []byte("/Root 1 0 R >>"), fmt.Appendf(nil, "/Root 1 0 R /Prev %d >>", xref), 1)
}

// FormFanOutPDF is a PDF of a few KB whose page draws form X0 fan times,
// which draws the next form fan times, depth forms deep: fan^depth runs
// of a form, the last (showing text) too deep to be read.
func FormFanOutPDF(depth, fan int) []byte {
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> /XObject << /X0 6 0 R >> >> >>",
		Stream("", "BT /F1 12 Tf 72 712 Td (The page's own text.) Tj ET /X0 Do"),
		HelveticaObject,
	}
	for i := range depth {
		objs = append(objs, Stream(fmt.Sprintf("/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> /XObject << /X0 %d 0 R >> >>", 7+i),
			strings.Repeat("/X0 Do ", fan)))
	}
	objs = append(objs, Stream("/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >>", "BT /F1 10 Tf (deep) Tj ET"))
	return ObjectsPDF("", objs...)
}

// RepeatedPagesPDF is a PDF of a few KB whose page list names one page
// fan×fan times (fan lists of fan references to it).
func RepeatedPagesPDF(text string, fan int) []byte {
	return ObjectsPDF("",
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Repeat("6 0 R ", fan), fan*fan),
		"<< /Type /Page /Parent 6 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		Stream("", "BT /F1 12 Tf 72 712 Td ("+text+") Tj ET"),
		HelveticaObject,
		fmt.Sprintf("<< /Type /Pages /Parent 2 0 R /Kids [%s] /Count %d >>", strings.Repeat("3 0 R ", fan), fan))
}
