package knowledge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/chatpipe/chatpipe/internal/docparse"
	"io/fs"
	"mime"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"
)

// IngestRequest is a document to add. Only Content is required.
type IngestRequest struct {
	TenantID  string // whose document it becomes ("" = DefaultTenant)
	Title     string // "" = the first heading, else the source's file name, else the first line
	Content   string
	Source    string // e.g. the uploaded file name; its extension helps tell the media type
	MediaType string // text/markdown, text/plain or text/html; "" = from Source's extension, else Markdown
	// File is a PDF, DOCX, PPTX, XLSX or CSV file to parse instead of
	// Content (see file.go); Source is its file name.
	File    []byte
	AddedBy string // the uploader's tenant when it differs from TenantID (a shared document); "" = TenantID
	// ForegroundTextBytes, above 0, bounds the text File may unpack to in
	// Ingest: past it, Ingest stops parsing and returns
	// ErrNeedsBackground. A caller answering a request sets it so that a
	// small file holding much text (a PDF's compressed pages) is parsed by
	// the bounded background workers, not on the request; 0 = only
	// docparse's own limit. IngestBackground ignores it.
	ForegroundTextBytes int64

	// Progress, when set, is told how far the ingest is after each step:
	// pages parsed (a parser of a paged format reports them through
	// progressReporter.pages), chunks cut, embedded and written. It is
	// called on the ingesting goroutine; it must not block for long.
	Progress func(Progress)
}

// Bytes is how much the request holds to read: its text, or its file's
// size once unpacked (docparse.UnpackedSize), which tells how long
// ingesting it may take better than the upload's size.
func (r IngestRequest) Bytes() int64 {
	n := int64(len(r.Content))
	if len(r.File) > 0 {
		n += docparse.UnpackedSize(r.File)
	}
	return n
}

// maxTitleRunes bounds a title derived from the content.
const maxTitleRunes = 200

// Ingest validates, chunks, embeds and stores a document, all or nothing:
// when it returns an error nothing was stored. A document whose content
// is already stored is not stored again: Ingest returns the existing one
// with ErrDuplicate. Duplicates are per tenant: the same content uploaded
// by two tenants is stored twice, once for each.
//
// When the embeddings endpoint fails (after retries), the document is
// still stored, for keyword search only: an upload should not be refused
// because an optional index is down. The returned document then has
// Embedded false and a Warning saying why; a caller that cancels ctx gets
// ctx's error and nothing is stored.
func (s *Service) Ingest(ctx context.Context, req IngestRequest) (Document, error) {
	return s.ingest(ctx, req, s.embedder != nil)
}

func (s *Service) ingest(ctx context.Context, req IngestRequest, embed bool) (Document, error) {
	return s.ingestAs(ctx, req, embed, ingestJob{})
}

// ingestAs is Ingest into the processing document of job (a background
// ingest: FinishDocument makes it ready, if job still holds its claim),
// or into a new document when job is zero. Errors of the store are
// marked errStore.
func (s *Service) ingestAs(ctx context.Context, req IngestRequest, embed bool, job ingestJob) (Document, error) {
	jobID := job.id
	start := time.Now()
	report := progressReporter{notify: req.Progress}
	cfg := s.options()
	fileHash := ""
	if req.File != nil && jobID == "" {
		// The same file stored (or being ingested) already: known before
		// it is parsed. A background job's document has its hash.
		fileHash = FileHash(req.File)
		switch existing, err := s.fileDuplicate(ctx, cmp.Or(req.TenantID, DefaultTenant), fileHash); {
		case errors.Is(err, ErrDuplicate):
			return existing, err
		case err != nil:
			return Document{}, fmt.Errorf("%w: %w", errStore, err)
		}
	}
	file, err := s.parseFile(ctx, req, cfg, report.pages) // nil for text (file.go)
	if err != nil {
		return Document{}, err
	}
	var text, mediaType, title string
	if file != nil {
		text, mediaType, title = file.text, file.mediaType, file.title(req)
	} else {
		if limit := cfg.MaxUploadBytes; limit > 0 && int64(len(req.Content)) > limit {
			return Document{}, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(req.Content), limit)
		}
		if mediaType, err = resolveMediaType(req.MediaType, req.Source); err != nil {
			return Document{}, err
		}
		if text, err = readText(req.Content, mediaType); err != nil {
			return Document{}, err
		}
		title = documentTitle(req.Title, text, req.Source, mediaType)
	}

	doc := Document{
		ID:        cmp.Or(jobID, newDocumentID()),
		AddedBy:   req.AddedBy,
		TenantID:  cmp.Or(req.TenantID, DefaultTenant),
		Title:     title,
		Source:    strings.TrimSpace(req.Source),
		MediaType: mediaType,
		Content:   text,
		FileHash:  fileHash,
		Claim:     job.claim,
	}
	if existing, err := s.store.DocumentByHash(ctx, doc.TenantID, ContentHash(text)); err == nil {
		return existing, ErrDuplicate
	} else if !errors.Is(err, ErrNotFound) {
		return Document{}, fmt.Errorf("%w: %w", errStore, err)
	}

	chunker := cfg.Chunking
	var chunks []Chunk
	switch {
	case file != nil:
		chunks = chunker.Sections(file.doc.Sections)
	case mediaType == MediaPlain:
		chunks = chunker.PlainText(text)
	default:
		chunks = chunker.Markdown(text)
	}
	for i := range chunks {
		chunks[i].ID = chunkIDFor(doc.ID, i)
	}
	report.chunks(len(chunks))

	warning := ""
	if embed && len(chunks) > 0 {
		texts := make([]string, len(chunks))
		lead := Lead(doc.Content)
		for i, c := range chunks {
			texts[i] = embeddingText(doc.Title, lead, c.Heading, c.Content)
		}
		vecs, err := s.embed(ctx, texts, embedRetries, report.embedded)
		switch {
		case ctx.Err() != nil:
			return Document{}, context.Cause(ctx)
		case err != nil:
			warning = "Stored for keyword search only: " + describeEmbeddingError(err) + "."
			s.log.Warn("embedding failed; document stored for keyword search only",
				zap.String("title", doc.Title), zap.Int("chunks", len(chunks)), zap.Error(err))
		default:
			for i := range chunks {
				chunks[i].Embedding = vecs[i]
			}
		}
	}

	var stored Document
	if jobID != "" {
		stored, err = s.store.FinishDocument(ctx, doc, chunks)
	} else {
		stored, err = s.store.AddDocument(ctx, doc, chunks)
		if errors.Is(err, ErrAlreadyExists) {
			stored, err = s.lostFileRace(ctx, doc.TenantID, fileHash, err)
		}
	}
	switch {
	case errors.Is(err, ErrDuplicate) || errors.Is(err, ErrNotFound):
		return stored, err
	case err != nil:
		return stored, fmt.Errorf("%w: %w", errStore, err)
	}
	report.written(len(chunks))
	if jobID == "" { // a background ingest did at its start
		// A failed attempt is known by the title it was sent with (see
		// IngestBackground), not by one read from its text.
		sent := stored
		sent.Title = sentTitle(req.Title)
		s.replaceFailed(ctx, sent)
	}
	stored.Warning = warning
	s.log.Info("document ingested", zap.String("document_id", stored.ID), zap.String("tenant_id", stored.TenantID),
		zap.String("title", stored.Title),
		zap.Int("bytes", stored.Bytes), zap.Int("chunks", stored.Chunks), zap.Bool("embedded", stored.Embedded),
		zap.Duration("elapsed", time.Since(start)))
	return stored, nil
}

// embeddingText is what is embedded for a chunk: the chunk under its
// document title and heading path, and its document's lead (see Lead)
// unless the chunk holds it, so a passage that only says "run it with go
// run" still carries what "it" is and what the document is about.
func embeddingText(title, lead, heading, content string) string {
	header := title
	switch {
	case heading == "":
	case title == "" || strings.HasPrefix(heading, title):
		header = heading
	default:
		header = title + " > " + heading
	}
	if lead != "" && !strings.Contains(content, lead) {
		header = strings.TrimPrefix(header+"\n"+lead, "\n")
	}
	if header == "" {
		return content
	}
	return header + "\n\n" + content
}

// resolveMediaType maps a declared media type (parameters ignored) and
// the source's extension to MediaMarkdown, MediaPlain or MediaHTML. A
// generic declaration (none, application/octet-stream, text/plain) gives
// way to a known extension, as browsers often send README.md as
// text/plain or octet-stream.
func resolveMediaType(declared, source string) (string, error) {
	mt := ""
	if strings.TrimSpace(declared) != "" {
		parsed, _, err := mime.ParseMediaType(declared)
		if err != nil {
			return "", fmt.Errorf("%w: %q", ErrUnsupportedType, declared)
		}
		mt = parsed
	}
	byExt := map[string]string{
		".md": MediaMarkdown, ".markdown": MediaMarkdown, ".mdown": MediaMarkdown,
		".html": MediaHTML, ".htm": MediaHTML, ".xhtml": MediaHTML,
		".txt": MediaPlain, ".text": MediaPlain,
	}[strings.ToLower(path.Ext(source))]
	switch mt {
	case "text/markdown", "text/x-markdown":
		return MediaMarkdown, nil
	case "text/html", "application/xhtml+xml":
		return MediaHTML, nil
	case "", "application/octet-stream", MediaPlain:
		switch {
		case byExt != "":
			return byExt, nil
		case mt == MediaPlain:
			return MediaPlain, nil
		}
		return MediaMarkdown, nil
	}
	return "", fmt.Errorf("%w: %s (use text/plain, text/markdown or text/html)", ErrUnsupportedType, mt)
}

// readText is the text of a text upload of mediaType as it is indexed:
// checked (checkText), normalised, an HTML page's text extracted;
// ErrEmpty when none is left.
func readText(content, mediaType string) (string, error) {
	if err := checkText(content); err != nil {
		return "", err
	}
	text := normalizeText(content)
	if mediaType == MediaHTML {
		var err error
		if text, err = HTMLToText(text); err != nil {
			return "", err
		}
	}
	if text == "" {
		return "", ErrEmpty
	}
	return text, nil
}

// checkText rejects what is not text: invalid UTF-8, a NUL byte, or more
// than 1% control characters (other than tab, line breaks, form feed and
// escape).
func checkText(s string) error {
	// UTF-16 (its byte order mark) is text in another encoding, though
	// it holds NUL bytes; other NUL bytes say binary; other invalid UTF-8
	// is most likely a legacy encoding such as Latin-1.
	if strings.HasPrefix(s, "\xff\xfe") || strings.HasPrefix(s, "\xfe\xff") {
		return fmt.Errorf("%w: %w (UTF-16)", ErrBinary, ErrNotUTF8)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%w: contains NUL bytes", ErrBinary)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %w", ErrBinary, ErrNotUTF8)
	}
	runes, control := 0, 0
	for _, r := range s {
		runes++
		if unicode.IsControl(r) && !strings.ContainsRune("\t\n\v\f\r\x1b", r) {
			control++
		}
	}
	if control*100 > runes {
		return fmt.Errorf("%w: %d control characters", ErrBinary, control)
	}
	if strings.TrimSpace(s) == "" {
		return ErrEmpty
	}
	return nil
}

// normalizeText drops a byte-order mark, turns CRLF and CR into LF and
// trims surrounding whitespace.
func normalizeText(s string) string {
	s = strings.TrimPrefix(s, "\uFEFF")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.TrimSpace(s)
}

// documentTitle is the given title, else the first heading (not of plain
// text), else the source's file name without extension, else the first
// line; whitespace collapsed, at most 200 characters.
func documentTitle(given, text, source, mediaType string) string {
	candidates := []string{given}
	if mediaType != MediaPlain {
		candidates = append(candidates, firstHeading(text))
	}
	first, _, _ := strings.Cut(text, "\n")
	candidates = append(candidates, fileTitle(source), first, "Untitled")
	for _, c := range candidates {
		if t := titleText(c); t != "" {
			return t
		}
	}
	return "Untitled"
}

// fileTitle is the title a file's name gives: its UploadName without the
// extension; "" for none.
func fileTitle(source string) string {
	base := UploadName(strings.TrimSpace(source))
	return strings.TrimSuffix(base, path.Ext(base))
}

// titleText is s as a title, whichever it comes from (given, a heading, a
// file name, a first line): invisible characters out (cleanName: a title
// cannot display as another), whitespace collapsed, at most
// maxTitleRunes characters.
func titleText(s string) string {
	t := strings.Join(strings.Fields(cleanName(s)), " ")
	if utf8.RuneCountInString(t) > maxTitleRunes {
		t = string([]rune(t)[:maxTitleRunes-1]) + "…"
	}
	return t
}

// firstHeading returns the text of the first ATX heading outside code
// fences, or "".
func firstHeading(text string) string {
	for _, sec := range parseMarkdown(text) {
		if sec.heading != "" {
			first, _, _ := strings.Cut(sec.heading, " > ")
			return first
		}
	}
	return ""
}

// LoadSamples ingests every Markdown file (.md, .markdown) of fsys, in
// lexical path order, as shared documents (SharedTenant) when there are
// none yet; it returns how many documents it added. Every tenant reads
// them, with API keys on too. A copy an older version loaded into
// DefaultTenant (same content and source) is deleted, so the open mode
// does not find each sample twice. Once embedding fails, the remaining
// samples are stored keyword-only without trying again, so a down
// endpoint does not slow startup once per file.
func (s *Service) LoadSamples(ctx context.Context, fsys fs.FS) (int, error) {
	_, total, err := s.store.Documents(ctx, SharedTenant, 1, 0)
	if err != nil {
		return 0, fmt.Errorf("knowledge: load samples: %w", err)
	}
	if total > 0 {
		return 0, nil
	}
	var paths []string
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := strings.ToLower(path.Ext(p)); !d.IsDir() && (ext == ".md" || ext == ".markdown") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("knowledge: load samples: %w", err)
	}
	added, embed := 0, s.embedder != nil
	for _, p := range paths {
		content, err := fs.ReadFile(fsys, p)
		if err != nil {
			return added, fmt.Errorf("knowledge: load sample %s: %w", p, err)
		}
		doc, err := s.ingest(ctx, IngestRequest{TenantID: SharedTenant, Content: string(content), Source: p, MediaType: MediaMarkdown}, embed)
		switch {
		case errors.Is(err, ErrDuplicate):
			continue
		case err != nil:
			return added, fmt.Errorf("knowledge: load sample %s: %w", p, err)
		}
		added++
		if doc.Warning != "" {
			embed = false
		}
		if old, err := s.store.DocumentByHash(ctx, DefaultTenant, doc.ContentHash); err == nil && old.Source == doc.Source {
			if err := s.store.DeleteDocument(ctx, old.ID); err != nil && !errors.Is(err, ErrNotFound) {
				return added, fmt.Errorf("knowledge: replace the default tenant's copy of sample %s: %w", p, err)
			}
		}
	}
	s.log.Info("sample documents loaded (shared)", zap.Int("documents", added))
	return added, nil
}
