package knowledge

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTMLToText extracts the readable text of an HTML page as Markdown the
// chunker understands: h1–h6 become # headings, paragraphs and other
// blocks are separated by blank lines, list items become "- " lines,
// table cells are joined by " | ", and <pre> becomes a code fence.
// Scripts, styles, templates and other invisible elements are dropped and
// whitespace is collapsed as a browser would. A page without an <h1>
// starts with its <title> as a heading.
//
// The parser refuses pages nested more than 512 elements deep; that is
// ErrTooDeep, not an empty page, so the user is told what is wrong.
func HTMLToText(src string) (string, error) {
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil { // from a string reader, only the depth limit fails
		return "", fmt.Errorf("%w: %v", ErrTooDeep, err)
	}
	var w htmlWriter
	if title := findTitle(doc); title != "" && !hasElement(doc, atom.H1) {
		w.blockBreak()
		w.raw("# " + title)
		w.blockBreak()
	}
	w.walk(doc)
	return strings.TrimSpace(w.b.String()), nil
}

// skipped elements hold no readable text.
var skipped = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Math: true, atom.Iframe: true, atom.Object: true, atom.Canvas: true,
	atom.Select: true, atom.Button: true,
}

// blocks are separated from what surrounds them by a blank line.
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Footer: true, atom.Aside: true, atom.Nav: true, atom.Blockquote: true,
	atom.Figure: true, atom.Figcaption: true, atom.Table: true, atom.Ul: true, atom.Ol: true,
	atom.Dl: true, atom.Form: true, atom.Hr: true, atom.Address: true, atom.Details: true,
	atom.Summary: true, atom.Fieldset: true, atom.Caption: true, atom.Body: true,
}

var headingLevel = map[atom.Atom]int{
	atom.H1: 1, atom.H2: 2, atom.H3: 3, atom.H4: 4, atom.H5: 5, atom.H6: 6,
}

// htmlWriter accumulates text, collapsing whitespace and line breaks.
type htmlWriter struct {
	b       strings.Builder
	brk     int  // pending break: 1 = new line, 2 = blank line
	space   bool // pending space between inline words
	ordered []int
}

func (w *htmlWriter) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.ElementNode:
		if skipped[n.DataAtom] {
			return
		}
		if level, ok := headingLevel[n.DataAtom]; ok {
			var h htmlWriter
			h.children(n)
			if t := strings.Join(strings.Fields(h.b.String()), " "); t != "" {
				w.blockBreak()
				w.raw(strings.Repeat("#", level) + " " + t)
				w.blockBreak()
			}
			return
		}
		switch n.DataAtom {
		case atom.Pre:
			w.pre(n)
			return
		case atom.Br:
			w.lineBreak()
			return
		case atom.Ol, atom.Ul:
			w.blockBreak()
			next := 0 // unordered
			if n.DataAtom == atom.Ol {
				next = 1
			}
			w.ordered = append(w.ordered, next)
			w.children(n)
			w.ordered = w.ordered[:len(w.ordered)-1]
			w.blockBreak()
			return
		case atom.Li:
			w.lineBreak()
			marker := "- "
			if k := len(w.ordered); k > 0 && w.ordered[k-1] > 0 {
				marker = strconv.Itoa(w.ordered[k-1]) + ". "
				w.ordered[k-1]++
			}
			if k := len(w.ordered); k > 1 {
				marker = strings.Repeat("  ", k-1) + marker
			}
			w.raw(marker)
			w.children(n)
			w.lineBreak()
			return
		case atom.Tr, atom.Dt, atom.Dd:
			w.lineBreak()
			w.children(n)
			w.lineBreak()
			return
		case atom.Td, atom.Th:
			if hasCellBefore(n) && w.brk == 0 {
				w.space = false
				w.raw(" | ")
			}
			w.children(n)
			return
		}
		if blocks[n.DataAtom] {
			w.blockBreak()
			w.children(n)
			w.blockBreak()
			return
		}
	}
	w.children(n)
}

func (w *htmlWriter) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
}

// text writes inline text, collapsing whitespace.
func (w *htmlWriter) text(s string) {
	for _, r := range s {
		if unicode.IsSpace(r) {
			w.space = true
			continue
		}
		w.flushBreak()
		if w.space && w.b.Len() > 0 && !w.atLineStart() {
			w.b.WriteByte(' ')
		}
		w.space = false
		w.b.WriteRune(r)
	}
}

// raw writes s as it is, after any pending break.
func (w *htmlWriter) raw(s string) {
	w.flushBreak()
	if w.space && !w.atLineStart() {
		w.b.WriteByte(' ')
	}
	w.space = false
	w.b.WriteString(s)
}

// pre writes preformatted text as a code fence, whitespace kept.
func (w *htmlWriter) pre(n *html.Node) {
	var b strings.Builder
	var collect func(*html.Node)
	collect = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		if n.Type == html.ElementNode && n.DataAtom == atom.Br {
			b.WriteByte('\n')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			collect(c)
		}
	}
	collect(n)
	code := strings.Trim(b.String(), "\n")
	if strings.TrimSpace(code) == "" {
		return
	}
	fence := "```"
	for strings.Contains(code, fence) {
		fence += "`"
	}
	w.blockBreak()
	w.raw(fence + "\n" + code + "\n" + fence)
	w.blockBreak()
}

func (w *htmlWriter) lineBreak()  { w.brk = max(w.brk, 1); w.space = false }
func (w *htmlWriter) blockBreak() { w.brk = 2; w.space = false }

func (w *htmlWriter) flushBreak() {
	if w.brk > 0 && w.b.Len() > 0 {
		w.b.WriteString("\n\n"[:w.brk])
	}
	w.brk = 0
}

func (w *htmlWriter) atLineStart() bool {
	s := w.b.String()
	return s == "" || s[len(s)-1] == '\n'
}

// hasCellBefore reports whether a table cell follows another in its row.
func hasCellBefore(n *html.Node) bool {
	for p := n.PrevSibling; p != nil; p = p.PrevSibling {
		if p.Type == html.ElementNode && (p.DataAtom == atom.Td || p.DataAtom == atom.Th) {
			return true
		}
	}
	return false
}

func findTitle(n *html.Node) string {
	if n.Type == html.ElementNode && n.DataAtom == atom.Title {
		var b strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.TextNode {
				b.WriteString(c.Data)
			}
		}
		return strings.Join(strings.Fields(b.String()), " ")
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if t := findTitle(c); t != "" {
			return t
		}
	}
	return ""
}

func hasElement(n *html.Node, a atom.Atom) bool {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return true
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if hasElement(c, a) {
			return true
		}
	}
	return false
}
