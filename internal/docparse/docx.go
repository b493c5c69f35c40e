package docparse

import (
	"cmp"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
)

// Word's main namespace; elements of other namespaces (drawings, math,
// markup compatibility) are walked through but never read as text.
const nsWord = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

// transitional is the namespace of the usual (transitional) Office Open
// XML for one of its strict form (ISO/IEC 29500 Strict, which Word and
// PowerPoint save as "Strict Open XML"), any other namespace unchanged.
func transitional(space string) string {
	switch space {
	case "http://purl.oclc.org/ooxml/wordprocessingml/main":
		return nsWord
	case "http://purl.oclc.org/ooxml/presentationml/main":
		return nsPresentation
	case "http://purl.oclc.org/ooxml/drawingml/main":
		return nsDrawing
	}
	return space
}

// parseDOCX reads word/document.xml: paragraphs with a heading style (or
// an outline level) start sections, tables become rows of cells joined
// by " | ".
func parseDOCX(ctx context.Context, data []byte, opts Options) (*Document, error) {
	p, err := openPackage(data, opts)
	if err != nil {
		return nil, err
	}
	styles, err := readWordStyles(p)
	if err != nil {
		return nil, err
	}
	// The body is read as it unpacks, never whole: it may be hundreds of
	// megabytes.
	body, err := p.open("word/document.xml")
	if err != nil || body == nil {
		return nil, cmp.Or(err, failf(ErrCorrupt, "the file is damaged: word/document.xml is missing"))
	}
	defer body.Close()
	w := &wordWalker{part: "word/document.xml", styles: styles, budget: opts.budget(), refs: map[string]bool{}}
	if err := w.walk(ctx, body); err != nil {
		return nil, err
	}
	w.secs.flush()
	doc := &Document{Title: p.coreTitle(), Sections: w.secs.out}
	if doc.Title == "" {
		doc.Title = w.title
	}
	// Footnotes and endnotes (citations, the small print of a contract)
	// follow the body, each kind under a heading of its own.
	for _, notes := range []struct{ part, note, heading string }{
		{"word/footnotes.xml", "footnote", "Footnotes"}, {"word/endnotes.xml", "endnote", "Endnotes"},
	} {
		secs, err := readNotes(ctx, p, notes.part, notes.note, w.refs, styles, w.budget)
		switch {
		case errors.Is(err, ErrCorrupt):
			continue // damaged notes cost the notes, not the body
		case err != nil:
			return nil, err
		}
		for _, s := range secs {
			s.Heading = strings.TrimSuffix(notes.heading+" > "+s.Heading, " > ")
			doc.Sections = append(doc.Sections, s)
		}
	}
	opts.progress(1, 1)
	return doc, nil
}

// readNotes reads the sections of a part of notes (note: its element,
// "footnote" or "endnote"): those refs says the body refers to, none
// when the package has no such part.
func readNotes(ctx context.Context, p *pkg, part, note string, refs map[string]bool, styles map[string]wordStyle, budget *textBudget) ([]Section, error) {
	r, err := p.open(part)
	if err != nil || r == nil {
		return nil, err
	}
	defer r.Close()
	w := &wordWalker{part: part, styles: styles, budget: budget, note: note, refs: refs}
	if err := w.walk(ctx, r); err != nil {
		return nil, err
	}
	w.secs.flush()
	return w.secs.out, nil
}

// wordStyle is what a paragraph style says about structure.
type wordStyle struct {
	level int  // heading level 1..9, 0 = body text
	title bool // the document's Title style
}

// readWordStyles maps style ids to heading levels: a style named
// "heading N" (Word and LibreOffice both name them so, whatever the UI
// language) or with an outline level.
func readWordStyles(p *pkg) (map[string]wordStyle, error) {
	data, err := p.read("word/styles.xml")
	if err != nil || data == nil {
		return nil, err
	}
	var doc struct {
		Styles []struct {
			ID   string `xml:"styleId,attr"`
			Name struct {
				Val string `xml:"val,attr"`
			} `xml:"name"`
			PPr struct {
				Outline *struct {
					Val string `xml:"val,attr"`
				} `xml:"outlineLvl"`
			} `xml:"pPr"`
		} `xml:"style"`
	}
	if err := unmarshalXML(data, &doc); err != nil {
		return nil, err
	}
	out := make(map[string]wordStyle, len(doc.Styles))
	for _, s := range doc.Styles {
		name := strings.ToLower(strings.TrimSpace(s.Name.Val))
		var st wordStyle
		if level := headingLevel(name); level > 0 {
			st.level = level
		} else if s.PPr.Outline != nil {
			if lvl, err := strconv.Atoi(s.PPr.Outline.Val); err == nil && lvl < 9 {
				st.level = lvl + 1
			}
		}
		st.title = name == "title"
		out[s.ID] = st
	}
	return out, nil
}

// builtinStyle is what a style id that word/styles.xml does not define
// (or a package without that part, as some generators write) says by
// itself: Word's built-in ids "Heading1" … "Heading9" and "Title".
func builtinStyle(id string) wordStyle {
	id = strings.ToLower(strings.TrimSpace(id))
	if level := headingLevel(id); level > 0 {
		return wordStyle{level: level}
	}
	return wordStyle{title: id == "title"}
}

// headingLevel is the level of a lower-case style name or id "heading N"
// or "headingN", N from 1 to 9; 0 for any other.
func headingLevel(s string) int {
	n, ok := strings.CutPrefix(s, "heading")
	if !ok {
		return 0
	}
	level, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || level < 1 || level > 9 {
		return 0
	}
	return level
}

// wordWalker turns the token stream of a document part into sections.
type wordWalker struct {
	part   string // its name, for errors
	styles map[string]wordStyle
	secs   sectionBuilder
	title  string
	budget *textBudget // the text the parse may still read

	para      strings.Builder // the paragraph being read
	style     string          // its pStyle
	outline   int             // its own outline level + 1, 0 = none
	tableRows []string        // rows of the outermost table being read
	rowCells  []string        // cells of the current row
	cell      []string        // paragraphs of the current cell
	depth     int             // table nesting depth

	// Notes: the body records the footnotes and endnotes it refers to
	// (refs, by kind and id); a part of notes (note: "footnote" or
	// "endnote") reads only those, never a separator, as Word shows them.
	refs     map[string]bool
	note     string
	skipping bool // inside a note not shown
}

func (w *wordWalker) walk(ctx context.Context, r io.Reader) error {
	dec := xml.NewDecoder(r)
	inText := false
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if errors.Is(err, ErrCorrupt) { // from the entry's reader
				return err
			}
			return failf(ErrCorrupt, "the file is damaged: %s is not valid XML (%v)", w.part, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if transitional(t.Name.Space) != nsWord {
				continue
			}
			if w.note != "" && t.Name.Local == w.note {
				typ := attr(t, "type") // separator, continuationSeparator, continuationNotice, or normal
				w.skipping = typ != "" && typ != "normal" || !w.refs[w.note+" "+attr(t, "id")]
			}
			if w.skipping {
				continue
			}
			switch t.Name.Local {
			case "footnoteReference", "endnoteReference":
				if w.refs != nil {
					w.refs[strings.TrimSuffix(t.Name.Local, "Reference")+" "+attr(t, "id")] = true
				}
			case "t":
				inText = true
			case "tab":
				w.para.WriteByte(' ')
			case "br", "cr":
				w.para.WriteByte('\n')
			case "pStyle":
				w.style = attr(t, "val")
			case "outlineLvl":
				if lvl, err := strconv.Atoi(attr(t, "val")); err == nil && lvl < 9 {
					w.outline = lvl + 1
				}
			case "p":
				w.para.Reset()
				w.style, w.outline = "", 0
			case "tbl":
				w.depth++
			case "tr":
				if w.depth == 1 {
					w.rowCells = w.rowCells[:0]
				}
			case "tc":
				if w.depth == 1 {
					w.cell = w.cell[:0]
				}
			}
		case xml.CharData:
			if inText && !w.skipping {
				if err := w.budget.spend(len(t)); err != nil {
					return err
				}
				w.para.Write(t)
			}
		case xml.EndElement:
			if transitional(t.Name.Space) != nsWord {
				continue
			}
			if w.skipping {
				w.skipping = t.Name.Local != w.note
				continue
			}
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				w.endParagraph()
			case "tc":
				if w.depth == 1 {
					w.rowCells = append(w.rowCells, strings.Join(w.cell, " "))
				}
			case "tr":
				if w.depth == 1 {
					if row := tableRow(w.rowCells); row != "" {
						w.tableRows = append(w.tableRows, row)
					}
				}
			case "tbl":
				w.depth--
				if w.depth == 0 {
					w.secs.add(strings.Join(w.tableRows, "\n"))
					w.tableRows = w.tableRows[:0]
				}
			}
		}
	}
}

func (w *wordWalker) endParagraph() {
	text := strings.Join(strings.Fields(w.para.String()), " ")
	w.para.Reset()
	if text == "" {
		return
	}
	if w.depth > 0 {
		w.cell = append(w.cell, text)
		return
	}
	st, ok := w.styles[w.style]
	if !ok {
		st = builtinStyle(w.style)
	}
	level := st.level
	if w.outline > 0 {
		level = w.outline
	}
	switch {
	case st.title && w.title == "":
		w.title = text
		w.secs.add(text)
	case level > 0:
		short, cut := ShortHeading(text)
		w.secs.heading(level, short)
		if cut {
			w.secs.add(text)
		}
	default:
		w.secs.add(text)
	}
}

// tableRow joins a row's cells with " | ", or "" when they are all empty.
func tableRow(cells []string) string {
	for _, c := range cells {
		if strings.TrimSpace(c) != "" {
			return strings.Join(cells, " | ")
		}
	}
	return ""
}

func attr(e xml.StartElement, local string) string {
	for _, a := range e.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

func unmarshalXML(data []byte, v any) error {
	if err := xml.Unmarshal(data, v); err != nil {
		return failf(ErrCorrupt, "the file is damaged: a part is not valid XML (%v)", err)
	}
	return nil
}

// sectionBuilder collects blocks of text under a heading path.
type sectionBuilder struct {
	page   int
	levels []int    // heading levels of the path
	path   []string // heading texts of the path
	blocks []string // blocks of the current section
	out    []Section
}

// heading closes the current section and starts one under text at level.
func (s *sectionBuilder) heading(level int, text string) {
	s.flush()
	for len(s.levels) > 0 && s.levels[len(s.levels)-1] >= level {
		s.levels, s.path = s.levels[:len(s.levels)-1], s.path[:len(s.path)-1]
	}
	s.levels, s.path = append(s.levels, level), append(s.path, text)
}

func (s *sectionBuilder) add(block string) {
	if strings.TrimSpace(block) != "" {
		s.blocks = append(s.blocks, block)
	}
}

func (s *sectionBuilder) flush() {
	if len(s.blocks) == 0 {
		return
	}
	s.out = append(s.out, Section{Page: s.page, Heading: strings.Join(s.path, " > "), Text: strings.Join(s.blocks, "\n\n")})
	s.blocks = nil
}
