// Package citation is the numbered-context contract between retrieval and
// the answer: how passages are written into a prompt as [n] blocks, how
// they are read back (the offline demo model answers from them), and the
// streaming filter that keeps an answer's [n] markers pointing at passages
// that exist.
package citation

import (
	"strconv"
	"strings"
)

// Passage is one numbered block of a prompt's context.
type Passage struct {
	Index   int    // the n that [n] cites
	Title   string // the document's title
	Heading string // the section heading, if any
	Content string
}

// NoPassages is the context written when retrieval found nothing, so the
// prompt tells the model (and the demo model can tell) that the knowledge
// base does not cover the question.
const NoPassages = "(The knowledge base has no passage about this question.)"

// headingSep separates a block's title from its heading.
const headingSep = " — "

// FormatContext writes passages as blocks separated by a blank line:
//
//	[1] Title — Heading
//	content
//
//	[2] Title
//	content
//
// Blank lines inside content are dropped so that a blank line always ends
// a block; ParseContext relies on it. No passages give NoPassages.
func FormatContext(passages []Passage) string {
	if len(passages) == 0 {
		return NoPassages
	}
	var b strings.Builder
	for i, p := range passages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(p.Index))
		b.WriteString("] ")
		b.WriteString(Label(p))
		for line := range strings.SplitSeq(p.Content, "\n") {
			line = strings.TrimRight(line, " \t\r")
			if strings.TrimSpace(line) == "" {
				continue
			}
			b.WriteByte('\n')
			b.WriteString(line)
		}
	}
	return b.String()
}

// Label is a passage's header text: its title and heading on one line,
// "Title — Heading" ("Untitled" when there is no title).
func Label(p Passage) string {
	title := oneLine(p.Title)
	if title == "" {
		title = "Untitled"
	}
	// Headings may be paths that start with the title ("Guide > Setup").
	heading := strings.TrimPrefix(oneLine(p.Heading), title+" > ")
	if heading == "" || heading == title {
		return title
	}
	return title + headingSep + heading
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// ParseContext finds the blocks FormatContext wrote in text: a line
// starting "[1] ", then "[2] " after the next blank line, and so on,
// numbered from 1 without gaps. It returns them and
// the text with them removed (the instructions and the question around the
// context). A title containing " — " is split at its first occurrence.
func ParseContext(text string) (passages []Passage, rest string) {
	lines := strings.Split(text, "\n")
	var out []string
	blank := true // the line before i is blank (or i is the first line)
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], "\r")
		header, ok := blockHeader(line, len(passages)+1)
		if !ok || !blank && len(passages) > 0 {
			out = append(out, lines[i])
			blank = strings.TrimSpace(line) == ""
			continue
		}
		p := Passage{Index: len(passages) + 1, Title: header}
		if t, h, found := strings.Cut(header, headingSep); found {
			p.Title, p.Heading = t, h
		}
		var content []string
		for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
			i++
			content = append(content, strings.TrimRight(lines[i], "\r"))
		}
		p.Content = strings.Join(content, "\n")
		passages = append(passages, p)
		blank = false
	}
	return passages, strings.Join(out, "\n")
}

// blockHeader reports whether line is the header "[n] title" of block n
// and returns the title.
func blockHeader(line string, n int) (string, bool) {
	prefix := "[" + strconv.Itoa(n) + "] "
	if !strings.HasPrefix(line, prefix) {
		return "", false
	}
	return line[len(prefix):], true
}
