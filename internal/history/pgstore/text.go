package pgstore

import (
	"strings"
	"unicode/utf8"

	"github.com/chatpipe/chatpipe/eventbus"
)

// cleanText makes s storable in PostgreSQL, which rejects NUL characters
// and invalid UTF-8 in text and jsonb (SQLite stores them): each becomes
// U+FFFD. Losing an answer to one stray byte from a model would be worse.
// Well-formed text, all there is in practice, is returned as is.
func cleanText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// cleanReferences applies cleanText to the references' text, copying
// them only when something changes. No references is nil.
func cleanReferences(refs []eventbus.Reference) []eventbus.Reference {
	if len(refs) == 0 {
		return nil
	}
	var out []eventbus.Reference
	for i, r := range refs {
		c := r
		c.ChunkID, c.DocumentID, c.Title = cleanText(r.ChunkID), cleanText(r.DocumentID), cleanText(r.Title)
		c.Heading, c.Content = cleanText(r.Heading), cleanText(r.Content)
		if c != r && out == nil {
			out = append(make([]eventbus.Reference, 0, len(refs)), refs[:i]...)
		}
		if out != nil {
			out = append(out, c)
		}
	}
	if out == nil {
		return refs
	}
	return out
}
