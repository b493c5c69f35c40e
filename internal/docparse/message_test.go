package docparse

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A library's complaint quoting kilobytes of the file's bytes (NULs,
// broken UTF-8) reaches the uploader as a short, printable message.
func TestAParseErrorMessageIsShortAndPrintable(t *testing.T) {
	quoted := "\x00\xff\xfe" + strings.Repeat("begincmap\x00\x01 <0000> <FFFF> ", 400)
	msg := failf(ErrCorrupt, "the file is damaged: page %d cannot be read (%v)", 3, quoted).Error()
	if !strings.HasPrefix(msg, "the file is damaged: page 3 cannot be read (") {
		t.Errorf("the message's own words are lost: %q", msg)
	}
	if n := utf8.RuneCountInString(msg); n > maxMessageRunes+1 || !utf8.ValidString(msg) || strings.ContainsAny(msg, "\x00\x01") {
		t.Fatalf("message of %d runes, valid UTF-8 %v: %q", n, utf8.ValidString(msg), msg)
	}
}
