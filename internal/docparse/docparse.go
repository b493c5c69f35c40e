// Package docparse reads the documents people upload to a knowledge base —
// PDF, Word (DOCX), PowerPoint (PPTX), Excel (XLSX) and CSV — into ordered
// sections of plain text that keep what retrieval needs: the page a
// passage is on and the heading path it sits under. It is pure Go: no cgo
// and no external program at run time.
//
// Every parser treats its input as hostile: ZIP-based formats are bounded
// in entry count and uncompressed size, and an XML part that would unpack
// to more than 500 times its compressed size is refused (zip bombs); a
// part is never read beyond the size it declares; a panic in a
// third-party reader on a malformed file becomes ErrCorrupt.
package docparse

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sentinel errors callers branch on; the error returned wraps one of them
// and its message is written for the person who uploaded the file.
var (
	// ErrNoText: the file parsed but holds no text, e.g. a scanned PDF
	// whose pages are images.
	ErrNoText = errors.New("no extractable text (scanned PDF?)")
	// ErrEncrypted: the file is password-protected.
	ErrEncrypted = errors.New("the file is encrypted (password-protected)")
	// ErrCorrupt: the file is damaged, truncated or not what its name says.
	ErrCorrupt = errors.New("the file is damaged or not a valid document")
	// ErrUnsupported: the format is not one docparse reads.
	ErrUnsupported = errors.New("unsupported file format")
	// ErrTooLarge: unpacking the file would exceed the limits in Options
	// (uncompressed size or number of entries of a ZIP-based format, or
	// the text read: Options.MaxTextBytes), or one of its XML parts is
	// compressed like a zip bomb (more than 500 times).
	ErrTooLarge = errors.New("the file unpacks to more than the allowed size")
	// ErrTextLimit: the text read passed Options.MaxTextBytes (or a PDF's
	// operators opsPerTextByte times that). It is an
	// ErrTooLarge; a caller that set a lower limit than it accepts in the
	// end (to answer a request soon) tells it from the other limits.
	ErrTextLimit = fmt.Errorf("%w: more text than Options.MaxTextBytes", ErrTooLarge)
)

// Media types of the formats Parse reads.
const (
	MediaPDF  = "application/pdf"
	MediaDOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	MediaPPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
	MediaXLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	MediaCSV  = "text/csv"
)

// Defaults for the zero Options. DefaultMaxTextBytes is far above the
// text of any real document (a 1,000-page book holds 2 to 3 MB) and far
// below what a decompression bomb unpacks to: a PDF page whose 600 KB
// stream inflates to 200 MB of text operators, a spreadsheet writing
// thousands of empty cells per row.
const (
	DefaultMaxUncompressedBytes = 256 << 20
	DefaultMaxEntries           = 10000
	DefaultMaxTextBytes         = 32 << 20
)

// Options bound and observe a Parse. The zero value is usable.
type Options struct {
	// MaxUncompressedBytes bounds the total uncompressed size of a
	// ZIP-based file (DOCX, PPTX, XLSX); 0 = DefaultMaxUncompressedBytes.
	MaxUncompressedBytes int64
	// MaxEntries bounds the number of files in a ZIP-based file;
	// 0 = DefaultMaxEntries.
	MaxEntries int
	// MaxTextBytes bounds the text read from a PDF, DOCX, PPTX or XLSX
	// (a spreadsheet's cell slots and separators count too; a CSV's text
	// is the file itself, bounded by its size): a parse
	// stops with ErrTextLimit as soon as it passes it, so a small file that
	// unpacks to gigabytes is refused before it is held in memory. A
	// PDF's pages may also run opsPerTextByte drawing operators per byte
	// of it (drawing shows no text, but takes time to parse);
	// 0 = DefaultMaxTextBytes.
	MaxTextBytes int64
	// Progress, when set, is called after each page (PDF), slide (PPTX)
	// or sheet (XLSX) with how many are done out of how many, from the
	// goroutine that called Parse.
	Progress func(done, total int)
}

func (o Options) maxUncompressed() int64 {
	if o.MaxUncompressedBytes > 0 {
		return o.MaxUncompressedBytes
	}
	return DefaultMaxUncompressedBytes
}

func (o Options) maxEntries() int {
	if o.MaxEntries > 0 {
		return o.MaxEntries
	}
	return DefaultMaxEntries
}

func (o Options) budget() *textBudget {
	max := o.MaxTextBytes
	if max <= 0 {
		max = DefaultMaxTextBytes
	}
	return &textBudget{max: max, left: max, opsLeft: opsPerTextByte * max}
}

// opsPerTextByte is how many PDF content-stream operators a parse may run
// per byte of its text budget. Drawing costs parsing time but shows no
// text: a page of a million path operators holds no character to count.
// Real pages run a few hundred to a few thousand operators each; at the
// default budget the bound is far beyond any document, and a request
// answered at once (a budget of background_bytes) hands a file drawing
// more than a couple of million to the background workers.
const opsPerTextByte = 8

// textBudget counts down the text a parse may still read, and the PDF
// operators it may still run.
type textBudget struct {
	max, left, opsLeft int64
	annotations        int // PDF annotations read so far
	forms              int // PDF form XObjects run so far
	// ctx, when set, ends the parse once done (checked every checkEvery
	// operators): a request given up on or a document deleted stops its
	// parse within a page.
	ctx       context.Context
	unchecked int64
}

// checkEvery is how many operators' worth of work a parse runs between
// two looks at its context.
const checkEvery = 1 << 14

// spend takes n bytes of text from the budget; past it, the parse stops
// with ErrTooLarge.
func (b *textBudget) spend(n int) error {
	b.left -= int64(n)
	if b.left < 0 {
		return failf(ErrTextLimit, "the file holds more than %s of text, the limit (a decompression bomb?)", sizeText(b.max))
	}
	return nil
}

// op takes one PDF operator from the budget; past it, the parse stops
// with ErrTextLimit.
func (b *textBudget) op() error { return b.ops(1) }

// ops takes n operators' worth of work from the budget.
func (b *textBudget) ops(n int64) error {
	b.opsLeft -= n
	if b.opsLeft < 0 {
		return failf(ErrTextLimit, "the file's pages run more than %d drawing operations, the limit (a decompression bomb?)", opsPerTextByte*b.max)
	}
	if b.unchecked += n; b.unchecked >= checkEvery && b.ctx != nil {
		b.unchecked = 0
		if b.ctx.Err() != nil {
			return context.Cause(b.ctx)
		}
	}
	return nil
}

// form takes one run of a PDF form XObject from the budget: formOps
// operators' worth (opening a stream and setting up its run costs far
// more than one operator), and one of the maxFormRuns a document may
// run, so that forms drawing each other many times over (a few KB that
// fan out to billions of runs) stop early.
func (b *textBudget) form() error {
	if b.forms++; b.forms > maxFormRuns {
		return failf(ErrTooLarge, "the file's pages draw more than %d forms, the limit (forms drawing each other over and over: a bomb?)", maxFormRuns)
	}
	return b.ops(formOps)
}

const (
	formOps     = 1000
	maxFormRuns = 100_000
)

func (o Options) progress(done, total int) {
	if o.Progress != nil {
		o.Progress(done, total)
	}
}

// Document is what Parse read from a file.
type Document struct {
	MediaType string    // one of the Media constants
	Title     string    // from the file's metadata or title style; "" when it has none
	Pages     int       // pages (PDF) or slides (PPTX); 0 for formats without pages
	Sections  []Section // in reading order
}

// Section is a run of text under one heading on one page.
type Section struct {
	// Page is 1-based: the PDF page or the PPTX slide; 0 when the format
	// has no pages.
	Page int
	// Heading is the heading path ("Guide > Install"), the slide title or
	// the sheet name; "" when there is none.
	Heading string
	// Text is the section's text: paragraphs separated by blank lines,
	// table rows by single line breaks with cells separated by " | ".
	Text string
	// Header, for tabular sections (XLSX, CSV), is the header row; Text
	// then holds only the data rows, one per line, and a chunker should
	// repeat Header at the top of every chunk it cuts from them.
	Header string
}

// Text is the whole document's text, sections separated by blank lines:
// what a caller indexes and deduplicates by.
func (d *Document) Text() string {
	var b strings.Builder
	for _, s := range d.Sections {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		if s.Header != "" {
			b.WriteString(s.Header)
			b.WriteByte('\n')
		}
		b.WriteString(s.Text)
	}
	return b.String()
}

// Supported reports whether name's extension is one Parse reads.
func Supported(name string) bool {
	_, ok := byExtension[strings.ToLower(path.Ext(name))]
	return ok
}

var byExtension = map[string]string{
	".pdf": MediaPDF, ".docx": MediaDOCX, ".pptx": MediaPPTX, ".xlsx": MediaXLSX, ".csv": MediaCSV,
}

// Parse reads a file. name (its file name) tells the format together with
// the content's first bytes; the content wins where they disagree in kind
// (a PDF named .docx is read as a PDF), and a ZIP named .docx that is not
// a Word document is ErrCorrupt. ctx is checked between pages.
func Parse(ctx context.Context, name string, data []byte, opts Options) (doc *Document, err error) {
	mediaType, err := DetectWithin(name, data, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		// The third-party readers panic on some malformed files.
		if r := recover(); r != nil {
			doc, err = nil, failf(ErrCorrupt, "the file is damaged and could not be read (%v)", r)
		}
	}()
	switch mediaType {
	case MediaPDF:
		doc, err = parsePDF(ctx, data, opts)
	case MediaDOCX:
		doc, err = parseDOCX(ctx, data, opts)
	case MediaPPTX:
		doc, err = parsePPTX(ctx, data, opts)
	case MediaXLSX:
		doc, err = parseXLSX(ctx, data, opts)
	case MediaCSV:
		doc, err = parseCSV(data)
	default:
		return nil, failf(ErrUnsupported, "unsupported file format %s", mediaType)
	}
	if err != nil {
		return nil, err
	}
	doc.MediaType = mediaType
	if strings.TrimSpace(doc.Text()) == "" {
		if mediaType == MediaPDF {
			return nil, ErrNoText
		}
		return nil, failf(ErrNoText, "the document has no text")
	}
	return doc, nil
}

// docError is an error a user reads: its own message, and the sentinel
// callers branch on.
type docError struct {
	kind error
	msg  string
}

func (e *docError) Error() string { return e.msg }
func (e *docError) Unwrap() error { return e.kind }

// failf makes an error of kind with a message for the user.
func failf(kind error, format string, args ...any) error {
	return &docError{kind: kind, msg: readable(fmt.Sprintf(format, args...))}
}

// maxMessageRunes is the longest message a parse error carries: a
// library's complaint it quotes may echo much of the file.
const maxMessageRunes = 400

// readable is msg fit for a person to read: invalid UTF-8 and control
// characters (a complaint quoting the file's bytes) made spaces, and at
// most maxMessageRunes, then "…".
func readable(msg string) string {
	msg = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(msg, " "))
	if utf8.RuneCountInString(msg) > maxMessageRunes {
		msg = string([]rune(msg)[:maxMessageRunes]) + "…"
	}
	return msg
}

// maxHeadingRunes is the longest heading a heading path keeps.
const maxHeadingRunes = 160

// ShortHeading is a heading as a heading path holds it: at most
// maxHeadingRunes, then "…", and whether it was cut. Every passage under a
// heading carries its path, so a long "heading" (a paragraph styled as
// one) would be stored again with each: a 1 MB document of eight 256 KB
// headings made a gigabyte of paths. A cut heading's whole text belongs in
// the section's text.
func ShortHeading(s string) (string, bool) {
	n := 0
	for i := range s {
		if n == maxHeadingRunes {
			return s[:i] + "…", true
		}
		n++
	}
	return s, false
}
