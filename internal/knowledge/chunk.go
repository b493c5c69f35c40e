package knowledge

import (
	"strings"
	"unicode/utf8"

	"github.com/chatpipe/chatpipe/internal/tokens"
)

// Chunker cuts documents into chunks of at most TargetTokens tokens (as
// tokens.Estimate counts them), neighbouring chunks of one section sharing
// about OverlapTokens tokens of text.
//
// Markdown is cut section by section: a heading (#…######) starts a
// section and a chunk never spans two, so every chunk has one heading
// path. Within a section, blocks (paragraphs, lists, tables, code fences)
// are packed whole while they fit; a block larger than a chunk is cut at
// sentence ends (. ! ? and the CJK 。！？；), then line breaks, then clause
// marks (， 、 , ; :), then spaces, and as a last resort between runes. A
// code fence that must be cut is cut between lines, each part closed and
// reopened so it stays a fence. The overlap is taken from the end of the
// previous chunk in whole sentences where they fit; it never comes from
// code. The same input always gives the same chunks.
type Chunker struct {
	TargetTokens  int
	OverlapTokens int
}

// Markdown cuts Markdown text into chunks. Only Index, Heading, Content
// and Tokens are set. A document of headings only becomes plain text.
func (c Chunker) Markdown(text string) []Chunk {
	return c.run(parseMarkdown(text), text)
}

// PlainText cuts text that has no markup: paragraphs are separated by
// blank lines, and nothing is a heading or a fence.
func (c Chunker) PlainText(text string) []Chunk {
	return c.run(parsePlain(text), text)
}

func (c Chunker) run(sections []section, text string) []Chunk {
	target := max(c.TargetTokens, 1)
	p := packer{target: target, overlap: min(max(c.OverlapTokens, 0), target-1)}
	for _, s := range sections {
		p.heading = s.heading
		for _, b := range s.blocks {
			for _, pc := range b.pieces(target) {
				p.add(pc)
			}
		}
		p.flush()
		p.prev = nil // no overlap across sections
	}
	if len(p.chunks) == 0 && strings.TrimSpace(text) != "" {
		// Headings only: index the text rather than nothing.
		return c.run(parsePlain(text), "")
	}
	return p.chunks
}

// piece is a unit the packer places whole: a block, or a part of one.
type piece struct {
	text string
	sep  string // what separates it from the piece before it in the same chunk
	size size   // of text
	code bool   // part of a code fence: never used as overlap
}

func newPiece(text, sep string, code bool) piece {
	return piece{text: text, sep: sep, size: measure(text), code: code}
}

// size counts what tokens.Estimate counts, so the size of a concatenation
// is the sum of the sizes of its parts, exactly.
type size struct{ ascii, other int }

func measure(s string) size {
	var z size
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			z.ascii++
			i++
			continue
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		z.other++
		i += n
	}
	return z
}

func (z size) plus(o size) size { return size{z.ascii + o.ascii, z.other + o.other} }

// tokens is tokens.Estimate of the text measured.
func (z size) tokens() int { return (z.ascii+3)/4 + z.other }

// sizeOf is the size of pieces joined into one text.
func sizeOf(pieces []piece) size {
	var z size
	for i, p := range pieces {
		if i > 0 {
			z = z.plus(measure(p.sep))
		}
		z = z.plus(p.size)
	}
	return z
}

// packer fills chunks with pieces in order.
type packer struct {
	target, overlap int
	heading         string
	page            int // of the section being packed (0: no pages)

	cur    []piece
	size   size    // of cur joined
	prev   []piece // the pieces of the chunk last flushed in this section
	chunks []Chunk
}

// with returns the size of the current chunk with p appended.
func (k *packer) with(p piece) size {
	if len(k.cur) == 0 {
		return p.size
	}
	return k.size.plus(measure(p.sep)).plus(p.size)
}

func (k *packer) add(p piece) {
	if z := k.with(p); z.tokens() <= k.target {
		k.cur, k.size = append(k.cur, p), z
		return
	}
	k.flush()
	k.cur = overlapTail(k.prev, k.overlap)
	k.size = sizeOf(k.cur)
	// Drop overlap from the front until p fits (pieces are at most target).
	for len(k.cur) > 0 && k.with(p).tokens() > k.target {
		k.cur = k.cur[1:]
		k.size = sizeOf(k.cur)
	}
	k.size = k.with(p)
	k.cur = append(k.cur, p)
}

func (k *packer) flush() {
	if len(k.cur) == 0 {
		return
	}
	var b strings.Builder
	for i, p := range k.cur {
		if i > 0 {
			b.WriteString(p.sep)
		}
		b.WriteString(p.text)
	}
	content := b.String()
	k.chunks = append(k.chunks, Chunk{
		Index:   len(k.chunks),
		Heading: k.heading,
		Page:    k.page,
		Content: content,
		Tokens:  tokens.Estimate(content),
	})
	k.prev, k.cur, k.size = k.cur, nil, size{}
}

// overlapTail returns the end of pieces worth at most budget tokens:
// whole pieces while they fit, then the trailing sentences (or, failing
// that, words or runes) of the next one. Code is never repeated.
func overlapTail(pieces []piece, budget int) []piece {
	var tail []piece // in order
	for i := len(pieces) - 1; i >= 0; i-- {
		p := pieces[i]
		if p.code {
			break
		}
		if fits(p, tail, budget) {
			tail = append([]piece{p}, tail...)
			continue
		}
		// Cut p into parts that fit, and take the last ones.
		parts := splitProse(p.text, budget, p.sep)
		for j := len(parts) - 1; j >= 0 && fits(parts[j], tail, budget); j-- {
			tail = append([]piece{parts[j]}, tail...)
		}
		break
	}
	return tail
}

// fits reports whether p followed by tail is at most budget tokens.
func fits(p piece, tail []piece, budget int) bool {
	return sizeOf(append([]piece{p}, tail...)).tokens() <= budget
}
