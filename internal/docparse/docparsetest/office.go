package docparsetest

import (
	"fmt"
	"html"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"
)

// Para is a DOCX paragraph: Level 1..9 makes it a heading ("Heading N"
// style), 0 body text; Rows, when set, make it a table instead.
type Para struct {
	Level    int
	Text     string
	Rows     [][]string
	Footnote int // the id of a footnote it refers to (see Footnotes), 0 = none
}

const wordNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`

// Footnotes is a word/footnotes.xml holding Word's two separators and a
// note of each text, numbered from 1 (for WithPart; a paragraph shows one
// by its Para.Footnote).
func Footnotes(texts ...string) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:footnotes ` + wordNS + `>` +
		`<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>` +
		`<w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p></w:footnote>`)
	for i, text := range texts {
		fmt.Fprintf(&b, `<w:footnote w:type="normal" w:id="%d"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t xml:space="preserve"> %s</w:t></w:r></w:p></w:footnote>`,
			i+1, html.EscapeString(text))
	}
	b.WriteString(`</w:footnotes>`)
	return []byte(b.String())
}

// Strict is the Office package pkg in ISO/IEC 29500 Strict form, as Word,
// PowerPoint and Excel save "Strict Open XML": every part's transitional
// namespaces replaced by the strict ones.
func Strict(t testing.TB, pkg []byte) []byte {
	t.Helper()
	r := strings.NewReplacer(
		"http://schemas.openxmlformats.org/wordprocessingml/2006/main", "http://purl.oclc.org/ooxml/wordprocessingml/main",
		"http://schemas.openxmlformats.org/presentationml/2006/main", "http://purl.oclc.org/ooxml/presentationml/main",
		"http://schemas.openxmlformats.org/drawingml/2006/main", "http://purl.oclc.org/ooxml/drawingml/main",
		"http://schemas.openxmlformats.org/spreadsheetml/2006/main", "http://purl.oclc.org/ooxml/spreadsheetml/main",
		"http://schemas.openxmlformats.org/officeDocument/2006/relationships", "http://purl.oclc.org/ooxml/officeDocument/relationships",
	)
	return MapParts(t, pkg, func(name string, data []byte) (string, []byte) {
		return name, append([]byte{}, r.Replace(string(data))...)
	})
}

// DOCX is a minimal Word document of the given paragraphs and tables.
func DOCX(t testing.TB, title string, paras ...Para) []byte {
	t.Helper()
	var body strings.Builder
	for _, p := range paras {
		if p.Rows != nil {
			body.WriteString("<w:tbl>")
			for _, row := range p.Rows {
				body.WriteString("<w:tr>")
				for _, c := range row {
					fmt.Fprintf(&body, "<w:tc><w:p><w:r><w:t>%s</w:t></w:r></w:p></w:tc>", html.EscapeString(c))
				}
				body.WriteString("</w:tr>")
			}
			body.WriteString("</w:tbl>")
			continue
		}
		body.WriteString("<w:p>")
		if p.Level > 0 {
			fmt.Fprintf(&body, `<w:pPr><w:pStyle w:val="Heading%d"/></w:pPr>`, p.Level)
		}
		fmt.Fprintf(&body, "<w:r><w:t>%s</w:t></w:r>", html.EscapeString(p.Text))
		if p.Footnote > 0 {
			fmt.Fprintf(&body, `<w:r><w:footnoteReference w:id="%d"/></w:r>`, p.Footnote)
		}
		body.WriteString("</w:p>")
	}
	var styles strings.Builder
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&styles, `<w:style w:type="paragraph" w:styleId="Heading%d"><w:name w:val="heading %d"/></w:style>`, i, i)
	}
	return Zip(t,
		[2]string{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		[2]string{"_rels/.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		[2]string{"docProps/core.xml", `<?xml version="1.0"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>` + html.EscapeString(title) + `</dc:title></cp:coreProperties>`},
		[2]string{"word/styles.xml", `<?xml version="1.0"?><w:styles ` + wordNS + `>` + styles.String() + `</w:styles>`},
		[2]string{"word/document.xml", `<?xml version="1.0"?><w:document ` + wordNS + `><w:body>` + body.String() + `</w:body></w:document>`},
	)
}

// Slide is a PPTX slide: a title, body paragraphs and an optional table.
type Slide struct {
	Title string
	Body  []string
	Rows  [][]string
}

const pptNS = `xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`

// PPTX is a minimal presentation of the given slides. The slide parts are
// numbered in reverse so that only the presentation's slide list gives
// the right order.
func PPTX(t testing.TB, slides ...Slide) []byte {
	t.Helper()
	var ids, rels strings.Builder
	files := [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>`},
	}
	for i, s := range slides {
		part := fmt.Sprintf("slide%d.xml", len(slides)-i)
		fmt.Fprintf(&ids, `<p:sldId id="%d" r:id="rId%d"/>`, 256+i, i+1)
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/%s"/>`, i+1, part)
		var sp strings.Builder
		fmt.Fprintf(&sp, `<p:sp><p:nvSpPr><p:cNvPr id="1" name="Title"/><p:cNvSpPr/><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>%s</a:t></a:r></a:p></p:txBody></p:sp>`, html.EscapeString(s.Title))
		sp.WriteString(`<p:sp><p:nvSpPr><p:cNvPr id="2" name="Body"/><p:cNvSpPr/><p:nvPr><p:ph idx="1"/></p:nvPr></p:nvSpPr><p:txBody>`)
		for _, b := range s.Body {
			fmt.Fprintf(&sp, `<a:p><a:r><a:t>%s</a:t></a:r></a:p>`, html.EscapeString(b))
		}
		sp.WriteString(`</p:txBody></p:sp>`)
		if s.Rows != nil {
			sp.WriteString(`<p:graphicFrame><a:graphic><a:graphicData><a:tbl>`)
			for _, row := range s.Rows {
				sp.WriteString("<a:tr>")
				for _, c := range row {
					fmt.Fprintf(&sp, `<a:tc><a:txBody><a:p><a:r><a:t>%s</a:t></a:r></a:p></a:txBody></a:tc>`, html.EscapeString(c))
				}
				sp.WriteString("</a:tr>")
			}
			sp.WriteString(`</a:tbl></a:graphicData></a:graphic></p:graphicFrame>`)
		}
		files = append(files, [2]string{"ppt/slides/" + part,
			`<?xml version="1.0"?><p:sld ` + pptNS + `><p:cSld><p:spTree>` + sp.String() + `</p:spTree></p:cSld></p:sld>`})
	}
	files = append(files,
		[2]string{"ppt/presentation.xml", `<?xml version="1.0"?><p:presentation ` + pptNS + `><p:sldIdLst>` + ids.String() + `</p:sldIdLst></p:presentation>`},
		[2]string{"ppt/_rels/presentation.xml.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` + rels.String() + `</Relationships>`})
	return Zip(t, files...)
}

// Sheet is an XLSX worksheet: its name and rows (the first is the header).
type Sheet struct {
	Name string
	Rows [][]any
}

// XLSX writes a workbook with excelize.
func XLSX(t testing.TB, sheets ...Sheet) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	for i, s := range sheets {
		if i == 0 {
			if err := f.SetSheetName("Sheet1", s.Name); err != nil {
				t.Fatal(err)
			}
		} else if _, err := f.NewSheet(s.Name); err != nil {
			t.Fatal(err)
		}
		for r, row := range s.Rows {
			cell, _ := excelize.CoordinatesToCellName(1, r+1)
			if err := f.SetSheetRow(s.Name, cell, &row); err != nil {
				t.Fatal(err)
			}
		}
	}
	buf, err := f.WriteToBuffer()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
