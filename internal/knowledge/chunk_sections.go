package knowledge

import (
	"strings"

	"github.com/chatpipe/chatpipe/internal/docparse"
	"github.com/chatpipe/chatpipe/internal/tokens"
)

// Sections cuts a parsed file's sections into chunks. A chunk never spans
// two sections, so it has one heading path and one page: a PDF's pages
// and a deck's slides are cut apart. Paragraphs are packed as in
// PlainText; a block whose every line is a table row (cells joined by
// " | ") is cut between rows. A tabular section (a sheet, a CSV file) is
// cut between rows and every chunk starts with its header row, so a row
// found alone still says what its cells are.
func (c Chunker) Sections(secs []docparse.Section) []Chunk {
	target := max(c.TargetTokens, 1)
	p := packer{target: target, overlap: min(max(c.OverlapTokens, 0), target-1)}
	for _, s := range secs {
		p.heading, p.page = s.Heading, s.Page
		if s.Header != "" {
			p.addRows(s.Header, strings.Split(s.Text, "\n"))
			continue
		}
		for _, ps := range parsePlain(s.Text) {
			for _, b := range ps.blocks {
				if isTable(b.lines) {
					b.kind = tableBlock
				}
				for _, pc := range b.pieces(target) {
					p.add(pc)
				}
			}
		}
		p.flush()
		p.prev = nil // no overlap across sections (pages, slides)
	}
	return p.chunks
}

// isTable reports whether every line is a row of cells.
func isTable(lines []string) bool {
	for _, l := range lines {
		if !strings.Contains(l, " | ") {
			return false
		}
	}
	return len(lines) > 0
}

// addRows packs rows into chunks of at most target tokens, each starting
// with header. A header that leaves less than half a chunk for rows is
// itself cut down to a quarter.
func (k *packer) addRows(header string, rows []string) {
	if tokens.Estimate(header) > k.target/2 {
		header = truncateToTokens(header, max(k.target/4, 1))
	}
	budget := max(k.target-tokens.Estimate(header+"\n"), 1)
	var cur []string
	size := 0
	emit := func() {
		if len(cur) == 0 {
			return
		}
		content := header + "\n" + strings.Join(cur, "\n")
		k.chunks = append(k.chunks, Chunk{Index: len(k.chunks), Heading: k.heading, Page: k.page,
			Content: content, Tokens: tokens.Estimate(content)})
		cur, size = nil, 0
	}
	for _, row := range rows {
		if strings.TrimSpace(row) == "" {
			continue
		}
		for _, pc := range splitProse(row, budget, "\n") {
			n := tokens.Estimate(pc.text) + 1
			if size+n > budget {
				emit()
			}
			cur, size = append(cur, pc.text), size+n
		}
	}
	emit()
	k.prev = nil
}

// truncateToTokens cuts s to its first parts that fit in budget tokens.
func truncateToTokens(s string, budget int) string {
	parts := splitProse(s, budget, "")
	if len(parts) == 0 {
		return ""
	}
	return parts[0].text + " …"
}
