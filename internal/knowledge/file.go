package knowledge

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode"

	"github.com/chatpipe/chatpipe/internal/docparse"
)

// parsedFile is an uploaded PDF, DOCX, PPTX, XLSX or CSV file read by
// docparse: its sections keep their pages and heading paths, which the
// chunker carries into every chunk.
type parsedFile struct {
	doc       *docparse.Document
	text      string // the document's content as stored and deduplicated
	mediaType string
}

// IsFile reports whether a file of this name is read by docparse (and so
// goes in IngestRequest.File) rather than taken as text.
func IsFile(name string) bool { return docparse.Supported(name) }

// SupportedTypes names the file types an upload may be, for messages.
const SupportedTypes = ".pdf, .docx, .pptx, .xlsx, .csv, .txt, .md or .html"

// textExtensions are the extensions of the text files an upload may be;
// the formats docparse reads are the others (IsFile).
var textExtensions = map[string]bool{".txt": true, ".text": true, ".md": true, ".markdown": true, ".html": true, ".htm": true}

// UploadName is the name an upload's file is known by: the last element
// of the name the client sent (a path's folders, with / or \, dropped),
// cleaned (cleanName), and without the trailing dots and spaces Windows
// drops too ("report." is "report"); "" when nothing is left. FileRequest
// applies it, so every way a file arrives names it alike.
func UploadName(sent string) string {
	name := path.Base(strings.ReplaceAll(sent, `\`, "/"))
	name = strings.TrimRight(cleanName(name), ". ")
	if name == "/" {
		return ""
	}
	return name
}

// cleanName is a name (a file's, a title) without control characters and
// the invisible ones that make it read as another: format characters
// (direction overrides and isolates, zero-width space, word joiner, soft
// hyphen, byte-order mark, tags; not the zero-width joiners some scripts
// spell with), line and paragraph separators, variation selectors and the
// Hangul fillers.
func cleanName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\u200c' || r == '\u200d':
			return r
		case unicode.IsControl(r), unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Variation_Selector),
			r == '\u115f' || r == '\u1160' || r == '\u3164' || r == '\uffa0':
			return -1
		}
		return r
	}, name)
}

// CheckName is FileRequest's verdict on a file's name alone: an
// ErrUnsupportedType naming the extension when no upload of that name is
// read (see AcceptedName), so that a caller can refuse the file unread.
func CheckName(name string) error {
	if name = UploadName(name); !AcceptedName(name) {
		return fmt.Errorf("%w: %s files are not read (use %s files)",
			ErrUnsupportedType, strings.ToLower(path.Ext(name)), SupportedTypes)
	}
	return nil
}

// AcceptedName reports whether a file of this name may be uploaded: a
// text type, a format docparse reads, or no extension at all (its content
// decides, see FileRequest).
func AcceptedName(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == "" || textExtensions[ext] || IsFile(name)
}

// isFileUpload reports whether an upload named name goes to the document
// parser: by its extension, or, without one, by its content (a PDF or a
// ZIP package).
func isFileUpload(name string, data []byte) bool {
	// A PDF is a PDF whatever its name says (as a PDF named .docx is read
	// as one): no text starts so.
	if bytes.HasPrefix(data, []byte("%PDF-")) {
		return true
	}
	if path.Ext(name) != "" {
		return IsFile(name)
	}
	return bytes.HasPrefix(data, []byte("%PDF-")) || bytes.HasPrefix(data, []byte("PK\x03\x04"))
}

// FileRequest is the IngestRequest of a file's bytes, named name: a format
// docparse reads goes in File, text in Content, as an upload's; an
// extension that is neither is ErrUnsupportedType. Every way a file
// reaches the knowledge base (an upload, chatpipe ingest, chatpipe eval)
// goes through it, so each accepts and reads the same files.
func FileRequest(name string, data []byte) (IngestRequest, error) {
	if err := CheckName(name); err != nil {
		return IngestRequest{}, err
	}
	name = UploadName(name)
	if isFileUpload(name, data) {
		return IngestRequest{File: data, Source: name}, nil
	}
	return IngestRequest{Content: string(data), Source: name}, nil
}

// DisplayTitle is what to call a document: its title, or, while its
// ingest has not read one yet (processing, or failed before), its file's
// name without the extension, which is also the title a file without one
// of its own gets.
func DisplayTitle(d Document) string {
	if d.Title != "" {
		return d.Title
	}
	return titleText(fileTitle(d.Source))
}

// isFileMedia reports whether a stored media type is one of the parsed
// file formats (its upload is kept as the file's bytes, not as text).
func isFileMedia(mediaType string) bool {
	switch mediaType {
	case docparse.MediaPDF, docparse.MediaDOCX, docparse.MediaPPTX, docparse.MediaXLSX, docparse.MediaCSV:
		return true
	}
	return false
}

// parseFile reads req.File, or returns nil when the request is text. Its
// errors wrap docparse's sentinels (ErrNoText, ErrEncrypted, ErrCorrupt,
// ErrUnsupported, ErrTooLarge) or ErrTooLarge when the file is over
// knowledge.max_file_bytes; their messages are for the uploader.
func (s *Service) parseFile(ctx context.Context, req IngestRequest, cfg *Options, pages func(done, total int)) (*parsedFile, error) {
	if req.File == nil {
		return nil, nil
	}
	if limit := cfg.MaxFileBytes; limit > 0 && int64(len(req.File)) > limit {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(req.File), limit)
	}
	opts := docparse.Options{Progress: pages}
	foreground := req.ForegroundTextBytes > 0 && req.ForegroundTextBytes < docparse.DefaultMaxTextBytes
	if foreground {
		opts.MaxTextBytes = req.ForegroundTextBytes
	}
	doc, err := docparse.Parse(ctx, req.Source, req.File, opts)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case foreground && errors.Is(err, docparse.ErrTextLimit):
		return nil, ErrNeedsBackground
	default:
		return nil, err
	}
	return &parsedFile{doc: doc, text: doc.Text(), mediaType: doc.MediaType}, nil
}

// title is the given title, else the file's own (metadata, Title style),
// else its file name.
func (f *parsedFile) title(req IngestRequest) string {
	return documentTitle(cmp.Or(req.Title, f.doc.Title), f.text, req.Source, MediaPlain)
}
