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
)

// parsePDF extracts the text of each page. github.com/ledongthuc/pdf (a
// pure-Go reader, a maintained fork of rsc.io/pdf) parses the file, its
// cross-reference tables, streams, filters and RC4 encryption; the text
// state and font decoding are ours (pdftext.go, cmap.go). Glyphs come in
// content-stream order, which is the reading order producers write; lines
// and word spaces are rebuilt from the glyphs' positions, as many
// producers position words instead of writing spaces.
func parsePDF(ctx context.Context, data []byte, opts Options) (*Document, error) {
	r, err := openPDF(data)
	if err != nil {
		return nil, err
	}
	if shortRC4Key(r) {
		return nil, failf(ErrEncrypted, "the PDF is protected (an owner password restricts it) with an encryption this reader cannot undo; save a copy without the protection and upload it again")
	}
	pages, err := pageList(r)
	if err != nil {
		return nil, err
	}
	n := len(pages)
	doc := &Document{Pages: n, Title: pdfTitle(r)}
	budget := opts.budget()
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
	// At most one fix of each kind (the reader checks the header first);
	// when they do not make it readable, the first complaint is the one
	// reported.
	fixed, first := data, err
	for range 2 {
		if err == nil {
			break
		}
		kind, fixes := kindOf(err), tolerate(fixed, err)
		if len(fixes) == 0 {
			break
		}
		// The first fix the reader takes, or else the first whose
		// complaint is no longer the one fixed.
		var errs []error
		for _, f := range fixes {
			if r, err = readPDF(f); err == nil {
				fixed = f
				break
			}
			errs = append(errs, err)
		}
		if err != nil {
			fixed, err = fixes[0], errs[0]
			for i, e := range errs {
				if k := kindOf(e); k != "" && k != kind {
					fixed, err = fixes[i], e
					break
				}
			}
		}
	}
	if err != nil {
		err = first
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

// tolerate gives the reader a file it refused for what viewers accept:
// bytes after the last %%EOF (a signature, a mail gateway's line, a
// re-save's note), bytes before the header, and a header other than
// "%PDF-1.0" to "%PDF-1.7" on a line of its own ("%PDF-2.0", or
// "%PDF-1.7" followed by a comment). The fix keeps every byte's offset
// from the header, so the cross-reference table still points where it
// should. ok is false when there is nothing to fix.
func tolerate(data []byte, err error) (fixes [][]byte) {
	switch kindOf(err) {
	case "eof":
		i := bytes.LastIndex(data, []byte("%%EOF"))
		if i < 0 {
			return nil
		}
		end := i + len("%%EOF")
		// Only what is no part of a PDF is cut: after the last %%EOF, a
		// file cut short inside an appended revision still holds objects,
		// and reading the revision before it would hide the damage.
		if pdfStructure.Match(data[end:]) {
			return nil
		}
		return [][]byte{data[:end]}
	case "header":
		// Viewers look for the header in the first 1024 bytes, as a
		// mail or web gateway may have put lines before it. The
		// producer's offsets count from the start of the file (the
		// lines are made a comment after a header of our own) or from
		// the header (the lines are cut).
		k := bytes.Index(data[:min(len(data), 1024)], []byte("%PDF-"))
		switch {
		case k == 0:
			return versionFixed(data)
		case k < 0:
			return nil
		case k > len("%PDF-1.7\n%"):
			commented := bytes.Clone(data)
			copy(commented, "%PDF-1.7\n%")
			for i := len("%PDF-1.7\n%"); i < k-1; i++ {
				commented[i] = ' '
			}
			commented[k-1] = '\n'
			fixes = append(fixes, commented)
		}
		return append(fixes, versionFixed(data[k:])...)
	}
	return nil
}

// versionFixed is data whose header, %PDF-d.d, is made "%PDF-1.7" on a
// line of its own; none when data does not start with a header.
func versionFixed(data []byte) [][]byte {
	if len(data) < 9 || !pdfHeader.Match(data[:8]) {
		return nil
	}
	fixed := bytes.Clone(data)
	copy(fixed[5:8], "1.7")
	if fixed[8] != '\r' && fixed[8] != '\n' {
		fixed[8] = '\n'
	}
	return [][]byte{fixed}
}

// kindOf is the kind of a reader's complaint tolerate may fix: "eof"
// (no %%EOF at the end), "header", or "".
func kindOf(err error) string {
	switch msg := err.Error(); {
	case strings.Contains(msg, "missing %%EOF"):
		return "eof"
	case strings.Contains(msg, "invalid header"):
		return "header"
	}
	return ""
}

// readPDF opens data with the reader, a panic of it an error.
func readPDF(data []byte) (r *pdf.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("%v", p)
		}
	}()
	return pdf.NewReader(bytes.NewReader(data), int64(len(data)))
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
	maxParentChain   = 64
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
	bytes.Buffer
	started    bool
	x, y, size float64 // where the last glyph ended, and its size
	angle      float64 // the last glyph's baseline direction
	last       rune
	// The line being built: where it starts in the buffer, and whether
	// its right-to-left glyphs (Hebrew, Arabic) came in the order they
	// are seen, left to right, or the order they are read.
	lineStart      int
	seen, read     int
	lastX, lastEnd float64
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
			b.WriteByte(' ')
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
				b.WriteByte(' ')
			}
		}
	}
	if isRTL(first) && b.Len() > b.lineStart {
		switch {
		case t.x >= b.lastEnd-0.5*size:
			b.seen++
		case t.x+t.w <= b.lastX+0.5*size:
			b.read++
		}
	}
	b.WriteString(t.s)
	b.started = true
	b.x, b.y, b.size, b.angle = t.x+t.w, t.y, size, t.angle
	b.lastX, b.lastEnd = t.x, t.x+t.w
	b.last = lastRune(t.s)
}

// newLine ends the line being built and writes sep.
func (b *lineBuilder) newLine(sep string) {
	b.endLine()
	b.WriteString(sep)
	b.last = '\n'
	b.lineStart = b.Len()
}

// endLine puts a line of right-to-left text drawn in the order it is
// seen into the order it is read.
func (b *lineBuilder) endLine() {
	if b.seen > b.read {
		line := logicalOrder(string(b.Bytes()[b.lineStart:]))
		b.Truncate(b.lineStart)
		b.WriteString(line)
	}
	b.seen, b.read = 0, 0
}

func (b *lineBuilder) String() string {
	b.endLine()
	return b.Buffer.String()
}

// logicalOrder is a line of a right-to-left paragraph in reading order,
// given in the order its glyphs stand from left to right: reversed, but
// each stretch of left-to-right text (Latin words, numbers) kept as it
// reads, and brackets outside them mirrored.
func logicalOrder(visual string) string {
	rs := []rune(visual)
	slices.Reverse(rs)
	for i := 0; i < len(rs); {
		if !isLTR(rs[i]) {
			rs[i] = mirrored(rs[i])
			i++
			continue
		}
		end := i // the stretch's last left-to-right rune
		for j := i; j < len(rs) && !isRTL(rs[j]); j++ {
			if isLTR(rs[j]) {
				end = j
			}
		}
		slices.Reverse(rs[i : end+1])
		i = end + 1
	}
	return string(rs)
}

// isRTL reports a letter of a script written right to left.
func isRTL(r rune) bool {
	return unicode.In(r, unicode.Hebrew, unicode.Arabic, unicode.Syriac, unicode.Thaana, unicode.Nko)
}

// isLTR reports a letter or digit read left to right.
func isLTR(r rune) bool {
	return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !isRTL(r)
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
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		(r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF)
}
