package docparse

import (
	"math"
	"strings"
	"unicode/utf16"

	"github.com/ledongthuc/pdf"
)

// This file walks a page's content stream with ledongthuc/pdf's
// interpreter and object model, but keeps its own text state and font
// decoding: the library's own Content() adds a range offset to the last
// byte only (so ToUnicode maps with wide ranges, as github.com/go-pdf/fpdf
// writes for every Chinese font, decode to garbage) and has no CID font
// widths (so it cannot tell where a word ends in a composite font).

// affine is a PDF matrix [a b c d e f].
type affine [6]float64

var identity = affine{1, 0, 0, 1, 0, 0}

// mul is m × n in PDF's row-vector convention: apply m, then n.
func (m affine) mul(n affine) affine {
	return affine{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func translate(x, y float64) affine { return affine{1, 0, 0, 1, x, y} }

// glyph is one positioned piece of text. Its position is in device
// space turned to the text's own direction (a glyph's baseline runs
// along x, the next line is lower in y), so that the lines of a page
// turned 90° (a landscape table in a portrait report, a booklet's
// imposed pages) are rebuilt as those of an upright one.
type glyph struct {
	s       string
	x, y, w float64 // origin and advance along the baseline
	size    float64
	angle   float64 // of the baseline, radians counterclockwise
	brk     bool    // no text: what follows starts a line
}

// place is the glyph of text s drawn with text rendering matrix trm and
// ending where next starts.
func place(s string, trm, next affine) glyph {
	ux, uy := trm[0], trm[1] // the baseline's direction in device space
	if n := math.Hypot(ux, uy); n > 0 {
		ux, uy = ux/n, uy/n
	} else {
		ux, uy = 1, 0 // a font size or horizontal scale of 0
	}
	along := trm[4]*ux + trm[5]*uy
	return glyph{s: s, x: along, y: trm[5]*ux - trm[4]*uy, w: next[4]*ux + next[5]*uy - along,
		size: math.Hypot(trm[2], trm[3]), angle: math.Atan2(uy, ux)}
}

// gstate is the part of the graphics state text extraction needs.
type gstate struct {
	ctm                                              affine
	font                                             *pdfFont
	size, charSpace, wordSpace, scale, leading, rise float64
}

// maxFormDepth bounds nested form XObjects (a loop of forms must end).
const maxFormDepth = 8

// pageGlyphs returns the glyphs a page shows, in content-stream order,
// including those of the forms it draws.
// Glyphs are appended to *out as they are read, so a caller recovering a
// panic keeps those read before it.
// The glyphs' text is taken from budget as they are read: past it,
// pageGlyphs panics with overBudget, so that a content stream inflating
// to hundreds of megabytes of text operators stops there instead of
// filling memory with glyphs.
func pageGlyphs(page pdf.Page, budget *textBudget, out *[]glyph) {
	w := &contentWalker{fonts: map[string]*pdfFont{}, out: out, budget: budget}
	resources := inherited(page.V, "Resources")
	// A blank page may have no content stream at all.
	if contents := page.V.Key("Contents"); !contents.IsNull() {
		w.run(contents, resources, gstate{ctm: identity, scale: 1}, 0)
	}
	annots := w.annots(page.V)
	for i := range annots.Len() {
		if w.budget.annotations >= maxAnnotations {
			break
		}
		w.budget.annotations++
		if err := w.budget.ops(annotationOps); err != nil {
			panic(overBudget{err})
		}
		w.annotation(annots, i, resources)
	}
}

// maxAnnotations bounds the annotations a document's pages are read for
// (a filled tax form has a few hundred); past it, the pages' own text is
// still read. annotationOps is what reading one costs from the operator
// budget: about as much time as ten operators.
const (
	maxAnnotations = 20000
	annotationOps  = 10
)

// annots is a page's annotations array, null when it cannot be read: a
// damaged one costs the annotations, not the page.
func (w *contentWalker) annots(page pdf.Value) (annots pdf.Value) {
	defer func() {
		if p := recover(); p != nil {
			annots = pdf.Value{}
		}
	}()
	annots = page.Key("Annots")
	annots.Len()
	return annots
}

// Annotation flags (PDF 32000-1, 12.5.3) of an annotation not shown:
// Invisible hides one of a type that is not standard.
const (
	annotInvisible = 1 << 0
	annotHidden    = 1 << 1
	annotNoView    = 1 << 5
)

// standardAnnotations are the annotation types of PDF 32000-1 and 2.0.
var standardAnnotations = map[string]bool{"Text": true, "Link": true, "FreeText": true, "Line": true,
	"Square": true, "Circle": true, "Polygon": true, "PolyLine": true, "Highlight": true, "Underline": true,
	"Squiggly": true, "StrikeOut": true, "Stamp": true, "Caret": true, "Ink": true, "Popup": true,
	"FileAttachment": true, "Sound": true, "Movie": true, "Widget": true, "Screen": true, "PrinterMark": true,
	"TrapNet": true, "Watermark": true, "3D": true, "Redact": true, "Projection": true, "RichMedia": true}

// annotation adds the text an annotation shows on the page, after the
// page's own, as lines of its own: a filled form's values, a signature's
// caption, a typewriter comment, a stamp. It is the text of its normal
// appearance (in the state shown, for a check box), drawn into its
// rectangle as a viewer draws it (PDF 32000-1, 12.5.5).
func (w *contentWalker) annotation(annots pdf.Value, i int, pageResources pdf.Value) {
	defer func() {
		// A damaged annotation costs its own text, not the page's; the
		// budget's end is the document's.
		if p := recover(); p != nil {
			if _, over := p.(overBudget); over {
				panic(p)
			}
		}
	}()
	a := annots.Index(i)
	flags, subtype := int64(a.Key("F").Float64()), a.Key("Subtype").Name() // F may be written as a real
	if flags&(annotHidden|annotNoView) != 0 || subtype == "Popup" ||
		flags&annotInvisible != 0 && !standardAnnotations[subtype] {
		return
	}
	ap := a.Key("AP").Key("N")
	if ap.Kind() == pdf.Dict {
		ap = ap.Key(a.Key("AS").Name())
	}
	rect, bbox := a.Key("Rect"), ap.Key("BBox")
	if ap.Kind() != pdf.Stream || rect.Len() != 4 || bbox.Len() != 4 ||
		!ap.Key("Subtype").IsNull() && ap.Key("Subtype").Name() != "Form" { // an image, a file: nothing to read
		return
	}
	m, ok := matrixOf(ap.Key("Matrix"))
	if !ok {
		m = identity
	}
	// The box as the matrix turns it, then fitted to the rectangle.
	x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, c := range [4][2]int{{0, 1}, {2, 1}, {0, 3}, {2, 3}} {
		p := translate(bbox.Index(c[0]).Float64(), bbox.Index(c[1]).Float64()).mul(m)
		x0, y0, x1, y1 = min(x0, p[4]), min(y0, p[5]), max(x1, p[4]), max(y1, p[5])
	}
	rx0, rx1 := minMax(rect.Index(0).Float64(), rect.Index(2).Float64())
	ry0, ry1 := minMax(rect.Index(1).Float64(), rect.Index(3).Float64())
	if !(x1 > x0 && y1 > y0 && rx1 > rx0 && ry1 > ry0) {
		return // nothing of it can be seen
	}
	sx, sy := (rx1-rx0)/(x1-x0), (ry1-ry0)/(y1-y0)
	res := ap.Key("Resources")
	if res.IsNull() {
		res = pageResources
	}
	w.room()
	*w.out = append(*w.out, glyph{brk: true})
	w.run(ap, res, gstate{ctm: m.mul(affine{sx, 0, 0, sy, rx0 - x0*sx, ry0 - y0*sy}), scale: 1}, 1)
}

func minMax(a, b float64) (float64, float64) { return min(a, b), max(a, b) }

// matrixOf is the matrix v holds, if it holds six numbers.
func matrixOf(v pdf.Value) (affine, bool) {
	if v.Kind() != pdf.Array || v.Len() != 6 {
		return affine{}, false
	}
	var m affine
	for i := range m {
		m[i] = v.Index(i).Float64()
	}
	return m, true
}

type contentWalker struct {
	scanned int64               // bytes scan read that no operator was taken for yet
	fonts   map[string]*pdfFont // by font object, per page
	out     *[]glyph
	budget  *textBudget
}

// maxPageGlyphs bounds the glyphs of one page, held until its text is
// built (about 80 bytes each): a dense page shows a few thousand, a
// poster of small print a hundred thousand.
const maxPageGlyphs = 1 << 20

// room stops the page (an overBudget panic) when it holds maxPageGlyphs.
func (w *contentWalker) room() {
	if len(*w.out) >= maxPageGlyphs {
		panic(overBudget{failf(ErrTooLarge, "a page of the file shows more than %d characters (a decompression bomb?)", maxPageGlyphs)})
	}
}

// scan reads a content stream (or an array of them) once before the
// interpreter does, for what the interpreter cannot bound: its bytes are
// taken from the operator budget (one operator per bytesPerOp: lexing
// them costs about as much), so that padding a stream that is drawn
// again and again costs its share; and more than maxOperands operands
// with no operator after them stop the page, as the interpreter would
// hold them all on its stack (a 200 KB file of "1 1 1 …" took 15 GB).
func (w *contentWalker) scan(strm pdf.Value) {
	streams := []pdf.Value{strm}
	if strm.Kind() == pdf.Array {
		streams = streams[:0]
		for i := range strm.Len() {
			streams = append(streams, strm.Index(i))
		}
	}
	var (
		buf [8 << 10]byte
		lx  operandCounter
	)
	for _, s := range streams {
		rc := s.Reader()
		for {
			n, err := rc.Read(buf[:])
			if lx.feed(buf[:n]) > maxOperands {
				rc.Close()
				panic(overBudget{failf(ErrTooLarge, "a page of the file gives more than %d operands to no drawing operation (a memory bomb?)", maxOperands)})
			}
			w.scanned += int64(n) // a remainder carries on: reads may be short
			if err := w.budget.ops(w.scanned / bytesPerOp); err != nil {
				rc.Close()
				panic(overBudget{err})
			}
			w.scanned %= bytesPerOp
			if err != nil {
				break
			}
		}
		rc.Close()
	}
}

// maxOperands is the most operands scan lets wait for their operator (a
// line's TJ array holds a few hundred); bytesPerOp is how many bytes of a
// content stream weigh one operator.
const (
	maxOperands = 1 << 18
	bytesPerOp  = 32
)

// operandCounter follows the tokens of a content stream (PDF 32000-1,
// 7.2) as far as telling operands from operators: an operator is one of
// the content-stream operators (Annex A); anything else pushes onto the
// interpreter's stack, including a bare word (the reader's interpreter
// knows a little PostScript: after "/x 0 def", each x pushes a value).
type operandCounter struct {
	operands  int
	state     byte // 0 between tokens, 'w' in a word or number, '/' in a name, '(' in a string, '<' in a hex string, '%' in a comment
	depth     int  // a string's open parentheses
	escaped   bool // the last byte of a string was a backslash
	word      []byte
	maybeDict bool // the last byte was a '<' between tokens
}

// feed takes the next bytes and returns the operands waiting.
func (c *operandCounter) feed(data []byte) int {
	for _, b := range data {
		switch c.state {
		case '(':
			switch {
			case c.escaped:
				c.escaped = false
			case b == '\\':
				c.escaped = true
			case b == '(':
				c.depth++
			case b == ')':
				if c.depth--; c.depth == 0 {
					c.state = 0
				}
			}
			continue
		case '<':
			if c.maybeDict {
				c.maybeDict = false
				if b == '<' { // "<<": a dictionary, not a string
					c.state = 0
					continue
				}
				c.operands++
			}
			if b == '>' {
				c.state = 0
			}
			continue
		case '%':
			if b == '\n' || b == '\r' {
				c.state = 0
			}
			continue
		case 'w', '/':
			if !pdfDelimiter(b) && !pdfSpace(b) {
				if c.state == 'w' && len(c.word) < 8 {
					c.word = append(c.word, b)
				}
				continue
			}
			c.endWord()
		}
		switch {
		case pdfSpace(b):
		case b == '(':
			c.operands++
			c.state, c.depth = '(', 1
		case b == '<':
			c.state, c.maybeDict = '<', true
		case b == '%':
			c.state = '%'
		case b == '/':
			c.operands++
			c.state = '/'
		case pdfDelimiter(b):
		default:
			c.state, c.word = 'w', append(c.word[:0], b)
		}
	}
	return c.operands
}

// endWord ends a word or name: an operator clears the operands.
func (c *operandCounter) endWord() {
	if c.state == 'w' {
		if contentOperators[string(c.word)] {
			c.operands = 0
		} else {
			c.operands++ // a number, true, a name the interpreter looks up …
		}
	}
	c.state = 0
}

// contentOperators are the operators of PDF content streams (PDF
// 32000-1, Annex A).
var contentOperators = func() map[string]bool {
	m := map[string]bool{}
	for _, op := range strings.Fields(`b B b* B* BDC BI BMC BT BX c cm CS cs d d0 d1 Do DP EI EMC ET EX f F f*
		G g gs h i ID j J K k l m M MP n q Q re RG rg ri s S SC sc SCN scn sh T* Tc Td TD Tf Tj TJ TL Tm
		Tr Ts Tw Tz v w W W* y ' "`) {
		m[op] = true
	}
	return m
}()

func pdfSpace(b byte) bool {
	return b == 0 || b == '\t' || b == '\n' || b == '\f' || b == '\r' || b == ' '
}

func pdfDelimiter(b byte) bool {
	return strings.IndexByte("()<>[]{}/%", b) >= 0
}

// overBudget is pageGlyphs' panic when the text passes the budget or a
// page maxPageGlyphs.
type overBudget struct{ err error }

func (w *contentWalker) run(strm, resources pdf.Value, g gstate, depth int) {
	var (
		stack    []gstate
		tm, tlm  = identity, identity
		fontByNm = map[string]*pdfFont{}
	)
	show := func(raw string) {
		f := g.font
		if f == nil {
			f = unknownFont
		}
		for _, c := range f.decode(raw) {
			if err := w.budget.spend(len(c.text)); err != nil {
				panic(overBudget{err})
			}
			w.room()
			trm := affine{g.size * g.scale, 0, 0, g.size, 0, g.rise}.mul(tm).mul(g.ctm)
			adv := c.width/1000*g.size + g.charSpace
			if c.space {
				adv += g.wordSpace
			}
			tm = translate(adv*g.scale, 0).mul(tm)
			next := affine{g.size * g.scale, 0, 0, g.size, 0, g.rise}.mul(tm).mul(g.ctm)
			*w.out = append(*w.out, place(c.text, trm, next))
		}
	}
	nextLine := func(tx, ty float64) {
		tlm = translate(tx, ty).mul(tlm)
		tm = tlm
	}
	w.scan(strm)
	pdf.Interpret(strm, func(stk *pdf.Stack, op string) {
		if err := w.budget.op(); err != nil {
			panic(overBudget{err})
		}
		n := stk.Len()
		args := make([]pdf.Value, n)
		for i := n - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		num := func(i int) float64 {
			if i < len(args) {
				return args[i].Float64()
			}
			return 0
		}
		mat := func() affine {
			return affine{num(0), num(1), num(2), num(3), num(4), num(5)}
		}
		switch op {
		case "q":
			stack = append(stack, g)
		case "Q":
			if len(stack) > 0 {
				g, stack = stack[len(stack)-1], stack[:len(stack)-1]
			}
		case "cm":
			g.ctm = mat().mul(g.ctm)
		case "BT":
			tm, tlm = identity, identity
		case "Tm":
			tm, tlm = mat(), mat()
		case "Td":
			nextLine(num(0), num(1))
		case "TD":
			g.leading = -num(1)
			nextLine(num(0), num(1))
		case "T*":
			nextLine(0, -g.leading)
		case "Tc":
			g.charSpace = num(0)
		case "Tw":
			g.wordSpace = num(0)
		case "Tz":
			g.scale = num(0) / 100
		case "TL":
			g.leading = num(0)
		case "Ts":
			g.rise = num(0)
		case "Tf":
			if len(args) == 2 {
				name := args[0].Name()
				f, ok := fontByNm[name]
				if !ok {
					f = w.font(resources.Key("Font").Key(name))
					fontByNm[name] = f
				}
				g.font, g.size = f, num(1)
			}
		case "Tj":
			if len(args) == 1 {
				show(args[0].RawString())
			}
		case "'":
			if len(args) == 1 {
				nextLine(0, -g.leading)
				show(args[0].RawString())
			}
		case "\"":
			if len(args) == 3 {
				g.wordSpace, g.charSpace = num(0), num(1)
				nextLine(0, -g.leading)
				show(args[2].RawString())
			}
		case "TJ":
			if len(args) == 1 {
				arr := args[0]
				for i := 0; i < arr.Len(); i++ {
					v := arr.Index(i)
					if v.Kind() == pdf.String {
						show(v.RawString())
					} else {
						tm = translate(-v.Float64()/1000*g.size*g.scale, 0).mul(tm)
					}
				}
			}
		case "Do":
			if len(args) == 1 && depth < maxFormDepth {
				x := resources.Key("XObject").Key(args[0].Name())
				if x.Kind() == pdf.Stream && x.Key("Subtype").Name() == "Form" {
					if err := w.budget.form(); err != nil {
						panic(overBudget{err})
					}
					fg := g
					if m, ok := matrixOf(x.Key("Matrix")); ok {
						fg.ctm = m.mul(g.ctm)
					}
					res := x.Key("Resources")
					if res.IsNull() {
						res = resources
					}
					w.run(x, res, fg, depth+1)
				}
			}
		}
	})
}

// font decodes a font dictionary once per page.
func (w *contentWalker) font(v pdf.Value) *pdfFont {
	if v.IsNull() {
		return unknownFont
	}
	key := v.String()
	if f, ok := w.fonts[key]; ok {
		return f
	}
	f := newPDFFont(v)
	w.fonts[key] = f
	return f
}

// pdfFont maps a font's codes to text and widths.
type pdfFont struct {
	toUnicode *cmap            // nil: none usable
	simple    pdf.TextEncoding // simple fonts: the font's encoding, for codes the ToUnicode map lacks
	composite bool             // Type0: codes of 1-4 bytes per the code space; else one byte
	codeBytes int              // a composite font's code length when toUnicode gives no code space
	ucs2      bool             // composite font with a UCS-2/UTF-16 CMap
	dingbats  bool             // ZapfDingbats in its built-in encoding
	widths    map[int]float64
	firstChar int
	defWidth  float64
}

var unknownFont = &pdfFont{codeBytes: 1, defWidth: 500}

type decoded struct {
	text  string
	width float64 // in thousandths of the font size
	space bool    // the single-byte code 32, which word spacing applies to
}

func newPDFFont(v pdf.Value) *pdfFont {
	f := &pdfFont{codeBytes: 1, widths: map[int]float64{}}
	if tu := v.Key("ToUnicode"); tu.Kind() == pdf.Stream {
		f.toUnicode = readCMap(tu)
	}
	if v.Key("Subtype").Name() == "Type0" {
		f.composite, f.codeBytes = true, 2
		enc := v.Key("Encoding").Name()
		f.ucs2 = strings.Contains(enc, "UCS2") || strings.Contains(enc, "UTF16")
		desc := v.Key("DescendantFonts").Index(0)
		f.defWidth = 1000
		if dw := desc.Key("DW"); !dw.IsNull() {
			f.defWidth = dw.Float64()
		}
		readCIDWidths(desc.Key("W"), f.widths)
		return f
	}
	f.simple = (&pdf.Font{V: v}).Encoder()
	base := v.Key("BaseFont").Name()
	if _, after, ok := strings.Cut(base, "+"); ok { // a subset's tag
		base = after
	}
	f.dingbats = v.Key("Encoding").IsNull() && (base == "ZapfDingbats" || base == "Dingbats")
	f.firstChar = int(v.Key("FirstChar").Int64())
	ws := v.Key("Widths")
	for i := 0; i < ws.Len(); i++ {
		f.widths[f.firstChar+i] = ws.Index(i).Float64()
	}
	f.defWidth = v.Key("FontDescriptor").Key("MissingWidth").Float64()
	if ws.Len() == 0 {
		f.defWidth = 500 // a standard font without metrics: a typical width
	}
	return f
}

// readCIDWidths reads a CID font's W array: c [w1 w2 …] or c1 c2 w.
func readCIDWidths(w pdf.Value, out map[int]float64) {
	for i := 0; i < w.Len(); {
		first := int(w.Index(i).Int64())
		if i+1 < w.Len() && w.Index(i+1).Kind() == pdf.Array {
			arr := w.Index(i + 1)
			for j := 0; j < arr.Len() && j < 1<<16; j++ {
				out[first+j] = arr.Index(j).Float64()
			}
			i += 2
			continue
		}
		if i+2 >= w.Len() {
			return
		}
		last, width := int(w.Index(i+1).Int64()), w.Index(i+2).Float64()
		for c := first; c <= last && c-first < 1<<16; c++ {
			out[c] = width
		}
		i += 3
	}
}

func (f *pdfFont) width(code int) float64 {
	if w, ok := f.widths[code]; ok {
		return w
	}
	return f.defWidth
}

func (f *pdfFont) decode(raw string) []decoded {
	var out []decoded
	for len(raw) > 0 {
		// A simple font's codes are one byte whatever its ToUnicode map's
		// code space says (gropdf declares two).
		n := 1
		if f.composite {
			n = f.codeBytes
			if f.toUnicode != nil {
				n = f.toUnicode.codeLength(raw, n)
			}
		}
		n = min(n, len(raw))
		code := 0
		for i := 0; i < n; i++ {
			code = code<<8 | int(raw[i])
		}
		var text string
		if f.toUnicode != nil {
			text = f.toUnicode.lookup(code, n, f.composite)
		}
		switch {
		case text != "":
		case f.ucs2:
			text = string(utf16.Decode([]uint16{uint16(code)}))
		case f.dingbats:
			text = dingbat(code)
		case f.simple != nil:
			text = f.simple.Decode(raw[:n])
		case !f.composite:
			text = string(rune(code))
		}
		out = append(out, decoded{text: text, width: f.width(code), space: n == 1 && code == 32})
		raw = raw[n:]
	}
	return out
}

// dingbat is the character of ZapfDingbats' code (its built-in encoding,
// which Acrobat's check boxes and radio buttons use: 4 is ✔, l is ●),
// "" for a code it has none for. Unicode's Dingbats block follows the
// font's order from U+2700, but for the ten glyphs Unicode already had.
func dingbat(code int) string {
	if code == 0x20 {
		return " "
	}
	if code < 0x21 || code > 0x7E {
		return ""
	}
	if r, ok := dingbatsElsewhere[code]; ok {
		return string(r)
	}
	return string(rune(0x2700 + code - 0x20))
}

var dingbatsElsewhere = map[int]rune{0x25: '☎', 0x2A: '☛', 0x2B: '☞', 0x48: '★', 0x6C: '●',
	0x6E: '■', 0x73: '▲', 0x74: '▼', 0x75: '◆', 0x77: '◗'}
