package handler

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/chatpipe/chatpipe/internal/docparse"
	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// This file is the part of uploads that reads files (PDF, DOCX, PPTX,
// XLSX, CSV) rather than text: which uploads are files, and what a user
// is told when one cannot be read.

// supportedUploads names the accepted types in messages.
const supportedUploads = knowledge.SupportedTypes

// fileUploadError maps a document parser's refusal to a response, or
// returns nil when err is not one. The parser's message is written for
// the uploader and is shown as it is.
func fileUploadError(err error) *requestError {
	status, code := 0, ""
	switch {
	case errors.Is(err, docparse.ErrNoText):
		status, code = http.StatusUnprocessableEntity, "no_text"
	case errors.Is(err, docparse.ErrEncrypted):
		status, code = http.StatusUnprocessableEntity, "encrypted_document"
	case errors.Is(err, docparse.ErrCorrupt):
		status, code = http.StatusUnprocessableEntity, "corrupt_document"
	case errors.Is(err, docparse.ErrTooLarge):
		status, code = http.StatusRequestEntityTooLarge, "document_too_large"
	case errors.Is(err, docparse.ErrUnsupported):
		status, code = http.StatusUnsupportedMediaType, "unsupported_type"
	default:
		return nil
	}
	return &requestError{status, code, sentence(err.Error())}
}

// fileTooLarge is the 413 of a file over knowledge.max_file_bytes.
func fileTooLarge(limit int64) *requestError {
	return &requestError{http.StatusRequestEntityTooLarge, "document_too_large",
		fmt.Sprintf("The file is larger than the limit of %d bytes (knowledge.max_file_bytes).", limit)}
}

// sentence capitalises a message and ends it with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// uploadLimit is the most a multipart upload may carry: the larger of the
// text and file limits.
func uploadLimit(textLimit, fileLimit int64) int64 { return max(textLimit, fileLimit) }
