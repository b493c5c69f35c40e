package docparse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/ledongthuc/pdf"
	"golang.org/x/text/unicode/bidi"
)

// parsePDF extracts the text of each page. github.com/ledongthuc/pdf (a
// pure-Go reader, a maintained fork of rsc.io/pdf) parses the file, its
// cross-reference tables, streams, filters and RC4 and 128-bit AES
// encryption (the other owner-password-only files: pdf_pdfcpu.go); the
// text state and font decoding are ours (pdftext.go, cmap.go). Glyphs come in
// content-stream order, which is the reading order producers write; lines
// and word spaces are rebuilt from the glyphs' positions, as many
// producers position words instead of writing spaces.
func parsePDF(ctx context.Context, data []byte, opts Options) (*Document, error) {
	r, err := openPDF(data)
	switch {
	case errors.Is(err, ErrEncrypted):
		r, err = openOwnerOnly(ctx, data, err)
	case err == nil && shortRC4Key(r):
		r, err = openOwnerOnly(ctx, data, failf(ErrEncrypted, "the PDF is protected (an owner password restricts it) with an encryption this reader cannot undo; save a copy without the protection and upload it again"))
	case holdsLZW(data):
		// The copy is read when there is one (also for a file the reader
		// could not open: its cross-reference stream is LZW); otherwise
		// the file as it is, whose LZW streams are then reported as they
		// are read, or the reader's complaint.
		if recoded, rerr := withoutLZW(ctx, data); rerr == nil {
			r, err = recoded, nil
		} else if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
	}
	if err != nil {
		return nil, err
	}
	pages, err := pageList(r)
	if err != nil {
		return nil, err
	}
	n := len(pages)
	doc := &Document{Pages: n, Title: pdfTitle(r)}
	budget := opts.budget()
	budget.ctx = ctx
	var glyphs []glyph // one page's at a time, the array reused
	for i := 1; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		text, err := pageText(pages[i-1], i, budget, &glyphs)
		if err != nil {
			return nil, err
		}
		if text != "" {
			doc.Sections = append(doc.Sections, Section{Page: i, Text: text})
		}
		opts.progress(i, n)
	}
	return doc, nil
}

func openPDF(data []byte) (r *pdf.Reader, err error) {
	r, err = readPDF(data)
	// When the reader refuses the file, the files a viewer would read in
	// its place are tried; when none is readable, the first complaint is
	// the one reported.
	if err != nil {
		first := err
		for _, fixed := range repairs(data) {
			if r, err = readPDF(fixed); err == nil {
				break
			}
		}
		if err != nil {
			err = first
		}
	}
	switch {
	case err == nil:
		return r, nil
	case bytes.Contains(data, []byte("/Encrypt")):
		return nil, failf(ErrEncrypted, "the PDF is encrypted (password-protected); remove the password and upload it again")
	case strings.Contains(err.Error(), "EOF"), strings.Contains(err.Error(), "startxref"):
		return nil, failf(ErrCorrupt, "the PDF is damaged or truncated (%v)", err)
	}
	return nil, failf(ErrCorrupt, "the file is damaged: the PDF cannot be read (%v)", err)
}

// repairs are the files a viewer reads in data's place, most likely
// first, for what viewers accept and the reader does not: bytes after the
// last %%EOF (a signature, a mail gateway's boundary line, a re-save's
// note), bytes before the header within its first 1024 (a gateway's
// lines, a byte-order mark), and a header other than "%PDF-1.0" to
// "%PDF-1.7" on a line of its own ("%PDF-2.0", or "%PDF-1.7" followed by
// a comment). Each keeps every byte's offset from the start of the file
// or, for bytes before the header, from the header, as producers count
// either way.
func repairs(data []byte) [][]byte {
	body := data
	if i := bytes.LastIndex(data, []byte("%%EOF")); i >= 0 {
		end := i + len("%%EOF")
		// Only what is no part of a PDF is cut: after the last %%EOF, a
		// file cut short inside an appended revision still holds
		// objects, and reading the revision before it would hide the
		// damage.
		if !pdfStructure.Match(data[end:]) && len(bytes.TrimSpace(data[end:])) > 0 {
			body = data[:end]
		}
	}
	k := bytes.Index(body[:min(len(body), 1024)], []byte("%PDF-"))
	if k < 0 || len(body) < k+9 || !pdfHeader.Match(body[k:k+8]) {
		return nil
	}
	var out [][]byte
	if k == 0 {
		if len(body) < len(data) {
			out = append(out, body)
		}
		return append(out, versionFixed(body))
	}
	// Offsets from the start of the file: a header of our own at its
	// start, what stood before the original header and the header itself
	// a comment after it.
	commented := bytes.Clone(body)
	n := copy(commented, "%PDF-1.7\n")
	if end := k + 8; n < end {
		commented[n] = '%'
		for i := n + 1; i < end; i++ {
			commented[i] = ' '
		}
	}
	return append(out, commented, versionFixed(body[k:]))
}

// versionFixed is data, which starts with a header %PDF-d.d, with the
// header made "%PDF-1.7" on a line of its own.
func versionFixed(data []byte) []byte {
	fixed := bytes.Clone(data)
	copy(fixed[5:8], "1.7")
	if fixed[8] != '\r' && fixed[8] != '\n' {
		fixed[8] = '\n'
	}
	return fixed
}

// readPDF opens data with the reader, a panic of it an error. Opening
// may read at most openReads bytes: the reader follows a file's chain of
// cross-reference sections (/Prev) with no memory of where it has been,
// so a section naming itself as the one before would be read forever.
func readPDF(data []byte) (r *pdf.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("%v", p)
		}
	}()
	f := &boundedReaderAt{r: bytes.NewReader(data), left: openReads(len(data))}
	r, err = pdf.NewReader(f, int64(len(data)))
	if f.left < 0 && err == nil {
		err = failf(ErrCorrupt, "the file is damaged: the PDF's cross-reference sections loop")
	} else if f.left < 0 {
		err = failf(ErrCorrupt, "the file is damaged: the PDF's cross-reference sections loop (%v)", err)
	}
	f.left = math.MaxInt64 // once open, reads of the pages are bounded by the text budget
	return r, err
}

// openReads is what opening a PDF of n bytes may read: its
// cross-reference sections, each once, are at most the file; twice that
// and a megabyte leaves room for re-reads.
func openReads(n int) int64 { return 2*int64(n) + 1<<20 }

// boundedReaderAt reads from r until left bytes were read, then fails
// every read (and left goes below zero).
type boundedReaderAt struct {
	r    io.ReaderAt
	left int64
}

var errReadLimit = errors.New("read limit reached")

func (b *boundedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if b.left <= 0 {
		b.left = -1
		return 0, errReadLimit
	}
	n, err := b.r.ReadAt(p[:min(int64(len(p)), b.left)], off)
	b.left -= int64(n)
	return n, err
}

// pdfStructure finds what only a PDF's body holds.
var pdfStructure = regexp.MustCompile(`\b(obj|endobj|stream|endstream|xref|trailer|startxref)\b`)

// pdfHeader is the start of a PDF of any version: %PDF-d.d.
var pdfHeader = regexp.MustCompile(`^%PDF-[0-9]\.[0-9]`)

// shortRC4Key reports whether the PDF is encrypted with RC4 and a key
// shorter than 128 bits (V 1, or V 2 with a Length below 128: the 40-bit
// keys of print-only PDFs). The reader opens such a file when its user
// password is empty, but decrypts its objects with a 16-byte key where
// the standard takes the key's length plus 5 bytes (checked by hand on a
// 40-bit file: the first 10 bytes of the same hash decrypt it), so its
// pages would read as noise.
func shortRC4Key(r *pdf.Reader) (short bool) {
	defer func() {
		if recover() != nil {
			short = false
		}
	}()
	enc := r.Trailer().Key("Encrypt")
	if enc.Kind() == pdf.Null {
		return false
	}
	bits := enc.Key("Length").Int64()
	if bits == 0 {
		bits = 40
	}
	switch enc.Key("V").Int64() {
	case 1:
		return true
	case 2:
		return bits < 128
	}
	return false
}

func pdfTitle(r *pdf.Reader) (title string) {
	defer func() {
		if recover() != nil {
			title = ""
		}
	}()
	return strings.Join(strings.Fields(r.Trailer().Key("Info").Key("Title").Text()), " ")
}

// Bounds of the page tree walk: a damaged or hostile file may make the
// tree a cycle (the library's own Page and NumPage then never return) or
// claim a huge count.
const (
	maxPageTreeDepth = 64
	maxPageTreeNodes = 1 << 20
	// maxPages bounds a document's pages: the longest manuals have a few
	// thousand, and a page list naming one page a million times would be
	// ingested as a million.
	maxPages       = 20_000
	maxParentChain = 64
)

// pageList walks the page tree into the document's pages, in order.
func pageList(r *pdf.Reader) (pages []pdf.Page, err error) {
	defer func() {
		if p := recover(); p != nil {
			pages, err = nil, failf(ErrCorrupt, "the file is damaged: the PDF's page list cannot be read (%v)", p)
		}
	}()
	budget := maxPageTreeNodes
	var walk func(node pdf.Value, depth int) error
	walk = func(node pdf.Value, depth int) error {
		if depth > maxPageTreeDepth {
			return failf(ErrCorrupt, "the file is damaged: the PDF's page tree is too deep (a cycle?)")
		}
		kids := node.Key("Kids")
		for i := 0; i < kids.Len(); i++ {
			if budget--; budget < 0 {
				return failf(ErrCorrupt, "the file is damaged: the PDF's page tree is too large (a cycle?)")
			}
			kid := kids.Index(i)
			switch {
			case kid.Key("Type").Name() == "Pages" || kid.Key("Kids").Kind() == pdf.Array:
				if err := walk(kid, depth+1); err != nil {
					return err
				}
			case kid.Kind() == pdf.Dict:
				pages = append(pages, pdf.Page{V: kid})
			}
		}
		return nil
	}
	if err := walk(r.Trailer().Key("Root").Key("Pages"), 0); err != nil {
		return nil, err
	}
	if len(pages) == 0 {
		return nil, failf(ErrCorrupt, "the file is damaged: the PDF has no pages")
	}
	if len(pages) > maxPages {
		return nil, failf(ErrTooLarge, "the PDF has %d pages, more than the %d a document may have (or its page list names pages over and over); split it into smaller files", len(pages), maxPages)
	}
	return pages, nil
}

// inherited is a page attribute, from the page or its nearest ancestor
// (PDF lets /Resources be inherited), with the Parent chain bounded.
func inherited(v pdf.Value, key string) pdf.Value {
	for range maxParentChain {
		if v.IsNull() {
			break
		}
		if x := v.Key(key); !x.IsNull() {
			return x
		}
		v = v.Key("Parent")
	}
	return pdf.Value{}
}

// pageText is page i's text: lines in stream order, a blank line where
// the vertical gap says a paragraph ends.
// buf holds the glyphs read, its array kept for the next page.
func pageText(page pdf.Page, i int, budget *textBudget, buf *[]glyph) (string, error) {
	glyphs, err := safeGlyphs(page, budget, (*buf)[:0])
	*buf = glyphs
	if err != nil && budget.ctx != nil && budget.ctx.Err() != nil {
		return "", context.Cause(budget.ctx) // stopped: the request given up on, the document deleted
	}
	if errors.Is(err, ErrTooLarge) {
		return "", err
	}
	if err != nil {
		// The library's lexer cannot skip an inline image (BI … ID data
		// EI), which scanners write; the text before it is kept.
		if !hasInlineImage(page) {
			return "", failf(ErrCorrupt, "the file is damaged: page %d cannot be read (%v)", i, err)
		}
	}
	var b lineBuilder
	rtl, ltr := 0, 0
	for _, g := range glyphs {
		switch classOf(g.s) {
		case classRTL:
			rtl++
		case classLTR:
			ltr++
		}
	}
	b.rtlPage = rtl > ltr
	for _, g := range glyphs {
		b.add(g)
	}
	return strings.TrimSpace(b.String()), nil
}

// safeGlyphs is pageGlyphs, appending to buf, with a panic of the
// library turned into an error; the glyphs read before it are returned. Past the budget, the
// error is the budget's (ErrTooLarge).
func safeGlyphs(page pdf.Page, budget *textBudget, buf []glyph) (glyphs []glyph, err error) {
	glyphs = buf
	defer func() {
		if p := recover(); p != nil {
			if over, ok := p.(overBudget); ok {
				err = over.err
				return
			}
			err = fmt.Errorf("%v", p)
		}
	}()
	pageGlyphs(page, budget, &glyphs)
	return glyphs, nil
}

// hasInlineImage reports whether a page's content has the operators of
// an inline image.
func hasInlineImage(page pdf.Page) (found bool) {
	defer func() {
		if recover() != nil {
			found = false
		}
	}()
	contents := page.V.Key("Contents")
	streams := []pdf.Value{contents}
	if contents.Kind() == pdf.Array {
		streams = streams[:0]
		for j := 0; j < contents.Len(); j++ {
			streams = append(streams, contents.Index(j))
		}
	}
	for _, s := range streams {
		rc := s.Reader()
		data, _ := io.ReadAll(io.LimitReader(rc, 64<<20))
		rc.Close()
		if inlineImage.Match(data) {
			return true
		}
	}
	return false
}

var inlineImage = regexp.MustCompile(`(?s)(^|\s)BI\s.*?\sID\s`)

// lineBuilder rebuilds lines and word spaces from positioned glyphs.
type lineBuilder struct {
	bytes.Buffer // the lines ended
	started      bool
	x, y, size   float64 // where the last glyph ended, and its size
	angle        float64 // the last glyph's baseline direction
	last         rune
	// The line being built, a glyph's text or a space each, and whether
	// its right-to-left glyphs (Hebrew, Arabic) came in the order they
	// are seen, left to right, or the order they are read.
	line           []string
	seen, read     int
	lastX, lastEnd float64
	// rtlPage: most of the page's letters are right-to-left ones, so a
	// line holding any is a right-to-left paragraph's.
	rtlPage bool
}

func (b *lineBuilder) add(t glyph) {
	if t.brk && b.started && b.last != '\n' {
		b.newLine("\n")
	}
	if t.s == "" {
		return
	}
	if strings.TrimSpace(t.s) == "" {
		if b.started && b.last != ' ' && b.last != '\n' {
			b.line = append(b.line, " ")
			b.last = ' '
		}
		b.x = t.x + t.w
		return
	}
	size := math.Max(math.Abs(t.size), 1)
	first, _ := firstRune(t.s)
	if b.started {
		dy := b.y - t.y
		switch {
		case math.Abs(t.angle-b.angle) > 0.01:
			// Text turned another way (a rotated caption, a vertical
			// label) is a line of its own.
			b.newLine("\n")
		case math.Abs(dy) > 0.5*math.Max(size, b.size):
			// A new line; a gap of more than about two lines ends a paragraph.
			if dy > 2.0*math.Max(size, b.size) {
				b.newLine("\n\n")
			} else {
				b.newLine("\n")
			}
		case b.last != ' ' && b.last != '\n':
			// Chinese and Japanese are written without spaces: only a
			// gap of a whole character or more (the next cell of a
			// table, the next column) parts two of their glyphs.
			space := 0.15 * size
			if isCJK(b.last) && isCJK(first) {
				space = size
			}
			if gap := t.x - b.x; gap > space || gap < -2*size {
				b.line = append(b.line, " ")
			}
		}
	}
	// Which way a right-to-left word runs is told by two of its letters
	// in a row.
	if isRTL(first) && isRTL(b.last) && len(b.line) > 0 {
		switch {
		case t.x >= b.lastEnd-0.5*size:
			b.seen++
		case t.x+t.w <= b.lastX+0.5*size:
			b.read++
		}
	}
	b.line = append(b.line, t.s)
	b.started = true
	b.x, b.y, b.size, b.angle = t.x+t.w, t.y, size, t.angle
	b.lastX, b.lastEnd = t.x, t.x+t.w
	b.last = lastRune(t.s)
}

// newLine ends the line being built and writes sep, counting the line
// ends already written (after an annotation's break, say).
func (b *lineBuilder) newLine(sep string) {
	b.endLine()
	have := 0
	for data := b.Bytes(); have < len(sep) && have < len(data) && data[len(data)-1-have] == '\n'; have++ {
	}
	b.WriteString(sep[have:])
	b.last = '\n'
}

// endLine writes the line being built, right-to-left text drawn in the
// order it is seen put into the order it is read.
func (b *lineBuilder) endLine() {
	line := b.line
	if b.seen > b.read {
		line = readingOrder(line, b.rtlPage)
	}
	for _, s := range line {
		b.WriteString(s)
	}
	b.line, b.seen, b.read = b.line[:0], 0, 0
}

func (b *lineBuilder) String() string {
	b.endLine()
	return b.Buffer.String()
}

// readingOrder is a line in the order it is read, given as its glyphs
// (and spaces) stand from left to right. A glyph's own text is kept
// whole (a ligature's letters stay in their order); a combining mark
// drawn as a glyph of its own is taken to stand left of its letter, as
// the producers measured draw it. A line mostly of right-to-left letters is a
// right-to-left paragraph: reversed, but each stretch of left-to-right
// text (Latin words, numbers with their signs: $100, 50%) kept as it
// reads, and brackets outside them mirrored; so is any line of a page
// mostly of right-to-left letters. In a line mostly of left-to-right text
// on another page, each right-to-left stretch alone is reversed.
func readingOrder(visual []string, rtlPage bool) []string {
	units := make([]string, 0, len(visual))
	rtl, ltr := 0, 0
	for _, s := range visual {
		units = append(units, s)
		switch classOf(s) {
		case classRTL:
			rtl++
		case classLTR:
			ltr++
		}
	}
	if rtl <= ltr && !rtlPage {
		reverseStretches(units, classRTL, classLTR)
		return units
	}
	slices.Reverse(units)
	reverseStretches(units, classLTR, classRTL)
	for i, u := range units {
		if classOf(u) != classLTR {
			units[i] = strings.Map(mirrored, u)
		}
	}
	return units
}

// reverseStretches reverses in place each stretch of units that starts
// and ends with a unit of class in and holds none of class out; a
// left-to-right stretch ending in a digit takes the number signs beside
// it ($, %) with it.
func reverseStretches(units []string, in, out int) {
	for i := 0; i < len(units); {
		if classOf(units[i]) != in {
			i++
			continue
		}
		end := i
		for j := i; j < len(units) && classOf(units[j]) != out; j++ {
			if classOf(units[j]) == in {
				end = j
			}
		}
		start := i
		if in == classLTR {
			for start > 0 && isNumberSign(units[start-1]) && endsInDigit(units[start], true) {
				start--
			}
			for end+1 < len(units) && isNumberSign(units[end+1]) && endsInDigit(units[end], false) {
				end++
			}
		}
		slices.Reverse(units[start : end+1])
		i = end + 1
	}
}

// Classes of a line's units for readingOrder.
const (
	classNeutral = iota // spaces, punctuation
	classRTL            // holds a right-to-left letter
	classLTR            // holds a left-to-right letter or a digit
)

func classOf(s string) int {
	class := classNeutral
	for _, r := range s {
		switch {
		case isRTL(r):
			return classRTL
		case isLTR(r):
			class = classLTR
		}
	}
	return class
}

// isNumberSign reports a unit of signs that go with a number (the
// European terminators of the bidirectional algorithm: $ % # ° …).
func isNumberSign(s string) bool {
	for _, r := range s {
		if p, _ := bidi.LookupRune(r); p.Class() != bidi.ET {
			return false
		}
	}
	return s != ""
}

// endsInDigit reports whether s starts (first) or ends with a digit.
func endsInDigit(s string, first bool) bool {
	rs := []rune(s)
	if len(rs) == 0 {
		return false
	}
	if first {
		return unicode.IsDigit(rs[0])
	}
	return unicode.IsDigit(rs[len(rs)-1])
}

// isRTL reports a letter of a script written right to left.
func isRTL(r rune) bool {
	if r < 0x0590 { // below Hebrew: Latin, Greek, Cyrillic …
		return false
	}
	return unicode.IsLetter(r) && unicode.In(r, unicode.Hebrew, unicode.Arabic, unicode.Syriac, unicode.Thaana, unicode.Nko)
}

// isLTR reports a letter read left to right, or a digit (numbers run left
// to right in right-to-left text too).
func isLTR(r rune) bool {
	return unicode.IsDigit(r) || (unicode.IsLetter(r) && !isRTL(r))
}

// mirrored is the bracket facing the other way, r itself for any other.
func mirrored(r rune) rune {
	pairs := []rune("()[]{}<>«»")
	if i := slices.Index(pairs, r); i >= 0 {
		return pairs[i^1]
	}
	return r
}

func firstRune(s string) (rune, bool) {
	for _, r := range s {
		return r, true
	}
	return 0, false
}

func lastRune(s string) rune {
	rs := []rune(s)
	return rs[len(rs)-1]
}

// isCJK reports scripts written without spaces between words, where a
// position gap must not become a space (it would split bigrams).
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) ||
		(r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF)
}
