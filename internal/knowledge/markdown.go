package knowledge

import (
	"strings"

	"github.com/chatpipe/chatpipe/internal/docparse"
	"github.com/chatpipe/chatpipe/internal/tokens"
)

// This file reads just enough Markdown for chunking: ATX headings, code
// fences, lists, tables and paragraphs. Everything else is a paragraph.

// section is the text under one heading.
type section struct {
	heading string // the heading path, "A > B"; "" before the first heading
	blocks  []block
}

type blockKind int

const (
	paragraphBlock blockKind = iota
	listBlock
	tableBlock
	codeBlock
)

// block is a run of lines that belong together.
type block struct {
	kind  blockKind
	lines []string
	// Code fences only: the opening line and the closing line ("" when the
	// fence runs to the end of the document).
	open, close string
}

func (b block) text() string { return strings.Join(b.lines, "\n") }

// blockSep separates blocks in a chunk, as a blank line does in the source.
const blockSep = "\n\n"

// pieces cuts the block into parts of at most target tokens; a block that
// fits is one piece.
func (b block) pieces(target int) []piece {
	text := b.text()
	if tokens.Estimate(text) <= target {
		return []piece{newPiece(text, blockSep, b.kind == codeBlock)}
	}
	switch b.kind {
	case codeBlock:
		return splitCode(b, target)
	case listBlock, tableBlock:
		// Items (or rows) first; an item too long for a chunk is prose.
		var out []piece
		for i, item := range b.items() {
			sep := "\n"
			if i == 0 {
				sep = blockSep
			}
			out = append(out, splitProse(item, target, sep)...)
		}
		return out
	default:
		return splitProse(text, target, blockSep)
	}
}

// items returns a list's items (an item is a marker line and the lines
// that continue it) or a table's rows.
func (b block) items() []string {
	if b.kind == tableBlock {
		return b.lines
	}
	var items []string
	for _, l := range b.lines {
		if listMarker(l) || len(items) == 0 {
			items = append(items, l)
			continue
		}
		items[len(items)-1] += "\n" + l
	}
	return items
}

// parseMarkdown splits text into sections and blocks.
func parseMarkdown(text string) []section {
	var (
		sections = []section{{}}
		path     []heading
		cur      *block
		fence    string // the open fence's marker run, e.g. "```"
	)
	endBlock := func() {
		if cur != nil {
			s := &sections[len(sections)-1]
			s.blocks = append(s.blocks, *cur)
			cur = nil
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if fence != "" {
			if closesFence(line, fence) {
				cur.close = line
				cur.lines = append(cur.lines, line)
				endBlock()
				fence = ""
				continue
			}
			cur.lines = append(cur.lines, line)
			continue
		}
		if marker := opensFence(line); marker != "" {
			endBlock()
			fence = marker
			cur = &block{kind: codeBlock, lines: []string{line}, open: line}
			continue
		}
		if level, title, ok := atxHeading(line); ok {
			endBlock()
			for len(path) > 0 && path[len(path)-1].level >= level {
				path = path[:len(path)-1]
			}
			short, cut := docparse.ShortHeading(title)
			if title != "" {
				path = append(path, heading{level, short})
			}
			sections = append(sections, section{heading: joinPath(path)})
			if cut { // the whole title is text of the section
				cur = &block{kind: paragraphBlock, lines: []string{title}}
				endBlock()
			}
			continue
		}
		if strings.TrimSpace(line) == "" {
			endBlock()
			continue
		}
		kind := paragraphBlock
		switch {
		case listMarker(line):
			kind = listBlock
		case strings.HasPrefix(strings.TrimSpace(line), "|"):
			kind = tableBlock
		}
		// A list or table may interrupt a paragraph; a list absorbs lazy
		// continuation lines.
		if cur != nil && cur.kind != kind && !(cur.kind == listBlock && kind == paragraphBlock) {
			endBlock()
		}
		if cur == nil {
			cur = &block{kind: kind}
		}
		cur.lines = append(cur.lines, line)
	}
	endBlock()
	return dropEmpty(sections)
}

// parsePlain splits text into paragraphs at blank lines, in one section.
func parsePlain(text string) []section {
	var s section
	var lines []string
	flush := func() {
		if len(lines) > 0 {
			s.blocks = append(s.blocks, block{kind: paragraphBlock, lines: lines})
			lines = nil
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		lines = append(lines, line)
	}
	flush()
	return dropEmpty([]section{s})
}

func dropEmpty(sections []section) []section {
	out := sections[:0]
	for _, s := range sections {
		if len(s.blocks) > 0 {
			out = append(out, s)
		}
	}
	return out
}

type heading struct {
	level int
	title string
}

func joinPath(path []heading) string {
	titles := make([]string, len(path))
	for i, h := range path {
		titles[i] = h.title
	}
	return strings.Join(titles, " > ")
}

// atxHeading parses "## Title ##" (at most three spaces of indent).
func atxHeading(line string) (level int, title string, ok bool) {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 {
		return 0, "", false
	}
	for level < len(s) && s[level] == '#' {
		level++
	}
	if level == 0 || level > 6 {
		return 0, "", false
	}
	rest := s[level:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return 0, "", false // "#hashtag"
	}
	title = strings.TrimSpace(rest)
	// A closing run of #s preceded by a space is not part of the title.
	if t := strings.TrimRight(title, "#"); t != title && (t == "" || strings.HasSuffix(t, " ")) {
		title = strings.TrimSpace(t)
	}
	return level, title, true
}

// opensFence returns the marker run (``` or ~~~, three or more) of a
// fence-opening line, or "".
func opensFence(line string) string {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 || len(s) < 3 || (s[0] != '`' && s[0] != '~') {
		return ""
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 || (s[0] == '`' && strings.Contains(s[n:], "`")) {
		return ""
	}
	return s[:n]
}

// closesFence reports whether line closes a fence opened with marker.
func closesFence(line, marker string) bool {
	s := strings.TrimSpace(line)
	if len(s) < len(marker) || strings.Trim(s, marker[:1]) != "" {
		return false
	}
	return len(line)-len(strings.TrimLeft(line, " ")) <= 3
}

// listMarker reports whether line starts a list item: "- ", "* ", "+ ",
// "1. " or "1) ".
func listMarker(line string) bool {
	s := strings.TrimLeft(line, " \t")
	if len(s) >= 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && (s[1] == ' ' || s[1] == '\t') {
		return true
	}
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(s) && (s[i] == '.' || s[i] == ')') && (s[i+1] == ' ' || s[i+1] == '\t')
}
