package docparse

import (
	"cmp"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	nsDrawing      = "http://schemas.openxmlformats.org/drawingml/2006/main"
	nsPresentation = "http://schemas.openxmlformats.org/presentationml/2006/main"
)

// parsePPTX reads the slides in presentation order: each slide is a page
// whose heading is its title placeholder's text; other text boxes are
// paragraphs and tables rows of cells joined by " | ".
func parsePPTX(ctx context.Context, data []byte, opts Options) (*Document, error) {
	p, err := openPackage(data, opts)
	if err != nil {
		return nil, err
	}
	slides, err := slideOrder(p)
	if err != nil {
		return nil, err
	}
	doc := &Document{Title: p.coreTitle(), Pages: len(slides)}
	budget := opts.budget()
	for i, name := range slides {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		slide, err := p.open(name)
		if err != nil {
			return nil, err
		}
		if slide == nil {
			return nil, failf(ErrCorrupt, "the file is damaged: slide %d (%s) is missing", i+1, name)
		}
		title, blocks, err := readSlide(slide)
		slide.Close()
		switch {
		case errors.Is(err, ErrCorrupt): // from the entry's reader
			return nil, err
		case err != nil:
			return nil, failf(ErrCorrupt, "the file is damaged: slide %d is not valid XML (%v)", i+1, err)
		}
		if len(blocks) > 0 || title != "" {
			short, cut := ShortHeading(title)
			if cut {
				blocks = append([]string{title}, blocks...)
			}
			text := strings.Join(blocks, "\n\n")
			if text == "" {
				text = title
			}
			title = short
			if err := budget.spend(len(text)); err != nil {
				return nil, err
			}
			doc.Sections = append(doc.Sections, Section{Page: i + 1, Heading: title, Text: text})
		}
		opts.progress(i+1, len(slides))
	}
	return doc, nil
}

// slideOrder lists the slide parts in the order of presentation.xml's
// slide list; a package without one falls back to the slide numbers of
// the part names.
func slideOrder(p *pkg) ([]string, error) {
	data, err := p.read("ppt/presentation.xml")
	if err != nil {
		return nil, err
	}
	var pres struct {
		IDs []struct {
			RID       string `xml:"http://schemas.openxmlformats.org/officeDocument/2006/relationships id,attr"`
			StrictRID string `xml:"http://purl.oclc.org/ooxml/officeDocument/relationships id,attr"`
		} `xml:"sldIdLst>sldId"`
	}
	if err := unmarshalXML(data, &pres); err != nil {
		return nil, err
	}
	rels, err := p.rels("ppt/presentation.xml")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range pres.IDs {
		if target, ok := rels[cmp.Or(id.RID, id.StrictRID)]; ok {
			out = append(out, target)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	for _, name := range p.names {
		if strings.HasPrefix(name, "ppt/slides/slide") && strings.HasSuffix(name, ".xml") {
			out = append(out, name)
		}
	}
	num := func(s string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(s, "ppt/slides/slide"), ".xml"))
		return n
	}
	sort.Slice(out, func(i, j int) bool { return num(out[i]) < num(out[j]) })
	return out, nil
}

// readSlide returns a slide's title and its other text blocks in order.
func readSlide(r io.Reader) (title string, blocks []string, err error) {
	dec := xml.NewDecoder(r)
	var (
		para                strings.Builder
		inText, isTitle     bool
		shape               []string // paragraphs of the current shape
		titleParts          []string
		rows, cells, cell   []string
		tableDepth, spDepth int
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			t.Name.Space = transitional(t.Name.Space)
			switch {
			case t.Name.Space == nsPresentation && t.Name.Local == "sp":
				spDepth++
				if spDepth == 1 {
					isTitle, shape = false, nil
				}
			case t.Name.Space == nsPresentation && t.Name.Local == "ph":
				if typ := attr(t, "type"); typ == "title" || typ == "ctrTitle" {
					isTitle = true
				}
			case t.Name.Space != nsDrawing:
			case t.Name.Local == "t":
				inText = true
			case t.Name.Local == "br":
				para.WriteByte(' ')
			case t.Name.Local == "p":
				para.Reset()
			case t.Name.Local == "tbl":
				tableDepth++
			case t.Name.Local == "tr" && tableDepth == 1:
				cells = cells[:0]
			case t.Name.Local == "tc" && tableDepth == 1:
				cell = cell[:0]
			}
		case xml.CharData:
			if inText {
				para.Write(t)
			}
		case xml.EndElement:
			t.Name.Space = transitional(t.Name.Space)
			switch {
			case t.Name.Space == nsPresentation && t.Name.Local == "sp":
				spDepth--
				if spDepth == 0 {
					if isTitle {
						titleParts = append(titleParts, shape...)
					} else if len(shape) > 0 {
						blocks = append(blocks, strings.Join(shape, "\n"))
					}
					shape = nil
				}
			case t.Name.Space != nsDrawing:
			case t.Name.Local == "t":
				inText = false
			case t.Name.Local == "p":
				text := strings.Join(strings.Fields(para.String()), " ")
				para.Reset()
				switch {
				case text == "":
				case tableDepth > 0:
					cell = append(cell, text)
				default:
					shape = append(shape, text)
				}
			case t.Name.Local == "tc" && tableDepth == 1:
				cells = append(cells, strings.Join(cell, " "))
			case t.Name.Local == "tr" && tableDepth == 1:
				if row := tableRow(cells); row != "" {
					rows = append(rows, row)
				}
			case t.Name.Local == "tbl":
				tableDepth--
				if tableDepth == 0 && len(rows) > 0 {
					blocks = append(blocks, strings.Join(rows, "\n"))
					rows = nil
				}
			}
		}
	}
	if len(titleParts) == 0 && len(blocks) > 0 {
		// No title placeholder (a deck made of text boxes): the first line
		// of the first text box is the title when it is short, as a title is.
		first, _, _ := strings.Cut(blocks[0], "\n")
		if utf8.RuneCountInString(first) <= maxFallbackTitle {
			return first, blocks, nil
		}
	}
	return strings.Join(titleParts, " "), blocks, nil
}

// maxFallbackTitle is the longest first line taken as a slide's title.
const maxFallbackTitle = 80
