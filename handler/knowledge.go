package handler

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/retrieval"
)

// DocumentJSON is a knowledge document as the API shows it.
type DocumentJSON struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Source    string `json:"source"`
	MediaType string `json:"media_type"`
	Chunks    int    `json:"chunks"`
	Bytes     int    `json:"bytes"`
	Embedded  bool   `json:"embedded"`
	CreatedAt string `json:"created_at"`
	Content   string `json:"content,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
	Warning   string `json:"warning,omitempty"`
	// Status is processing, ready (searchable) or failed; Progress is set
	// while processing and Error says why a document failed.
	Status   string        `json:"status"`
	Progress *ProgressJSON `json:"progress,omitempty"`
	Error    string        `json:"error,omitempty"`
	// DuplicateOf: a failed ingest found its text already stored in this
	// document (a file whose bytes differ, its text the same).
	DuplicateOf string `json:"duplicate_of,omitempty"`
	// Shared: every tenant reads the document; AddedBy is the tenant that
	// added it (shown for shared documents, on a single document only).
	Shared  bool   `json:"shared"`
	AddedBy string `json:"added_by,omitempty"`
}

// ProgressJSON is how far a background ingest is; a total of 0 is not
// known yet (pages: not a paged format).
type ProgressJSON struct {
	PagesDone      int `json:"pages_done"`
	PagesTotal     int `json:"pages_total"`
	ChunksTotal    int `json:"chunks_total"`
	ChunksEmbedded int `json:"chunks_embedded"`
	ChunksWritten  int `json:"chunks_written"`
}

func documentJSON(d knowledge.Document, withContent bool) DocumentJSON {
	out := DocumentJSON{ID: d.ID, Title: d.Title, Source: d.Source, MediaType: d.MediaType, Chunks: d.Chunks,
		Bytes: d.Bytes, Embedded: d.Embedded, CreatedAt: d.CreatedAt.UTC().Format(time.RFC3339Nano), Warning: d.Warning,
		Status: cmp.Or(d.Status, knowledge.StatusReady), Error: d.Error, DuplicateOf: d.DuplicateOf, Shared: d.Shared()}
	out.Title = knowledge.DisplayTitle(d) // a processing document has its title once its text is read
	if d.Status == knowledge.StatusProcessing || d.Status == knowledge.StatusFailed {
		p := d.Progress
		out.Progress = &ProgressJSON{PagesDone: p.PagesDone, PagesTotal: p.PagesTotal, ChunksTotal: p.ChunksTotal,
			ChunksEmbedded: p.ChunksEmbedded, ChunksWritten: p.ChunksWritten}
	}
	if d.Shared() {
		out.AddedBy = d.AddedBy
	}
	if withContent {
		out.Content = d.Content
	}
	return out
}

type addDocumentRequest struct {
	Title   string `json:"title"`
	Content string `json:"content"`
	Shared  bool   `json:"shared"`
}

// addDocument ingests a document sent as JSON {"title","content","shared"}
// or as a multipart upload (field "file", optional fields "title" and
// "shared"). 201 with the new document; 200 with the existing one when
// the same content is already stored; 202 with the processing document
// when the upload is, or its file unpacks to, more than
// knowledge.ingest.background_bytes (its GET shows the progress); 503
// when the background queue is full.
func (h *Handler) addDocument(c *gin.Context) {
	limit, fileLimit := h.cfg().Knowledge.MaxUploadBytes, h.cfg().Knowledge.MaxFileBytes
	var req knowledge.IngestRequest
	shared := false
	mt, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if mt == "multipart/form-data" {
		var rerr *requestError
		if req, shared, rerr = readUpload(c, limit, fileLimit); rerr != nil {
			abort(c, rerr.status, rerr.code, rerr.message)
			return
		}
	} else {
		var body addDocumentRequest
		// JSON escapes can make the body longer than the text it carries.
		if rerr := decodeJSON(c, 2*limit+64<<10, &body, false); rerr != nil {
			abort(c, rerr.status, rerr.code, rerr.message)
			return
		}
		req = knowledge.IngestRequest{Title: body.Title, Content: body.Content}
		shared = body.Shared
	}

	req.TenantID = tenant(c)
	if shared {
		if !managesShared(c) {
			abort(c, http.StatusForbidden, "forbidden", "This API key may not add shared documents (auth.keys[].manage_shared).")
			return
		}
		req.TenantID, req.AddedBy = knowledge.SharedTenant, tenant(c)
	}
	// By what the upload unpacks to: a small DOCX may hold 100 MB of text,
	// too long to ingest before answering. A PDF's pages are compressed
	// streams that only parsing measures: one found to hold more text
	// than that goes to the background too.
	backgroundBytes := h.cfg().Knowledge.Ingest.BackgroundBytes
	background := req.Bytes() > backgroundBytes
	var (
		doc knowledge.Document
		err error
	)
	if !background {
		req.ForegroundTextBytes = max(backgroundBytes, 1)
		doc, err = h.deps.Knowledge.Ingest(c.Request.Context(), req)
		background = errors.Is(err, knowledge.ErrNeedsBackground)
	}
	if background {
		doc, err = h.deps.Knowledge.IngestBackground(c.Request.Context(), req)
	}
	switch {
	case err == nil && background:
		c.Header("Location", "/api/v1/knowledge/documents/"+doc.ID)
		c.JSON(http.StatusAccepted, documentJSON(doc, false))
	case err == nil:
		c.JSON(http.StatusCreated, documentJSON(doc, false))
	case errors.Is(err, knowledge.ErrBusy):
		c.Header("Retry-After", "10")
		abort(c, http.StatusServiceUnavailable, "ingest_busy",
			"Too many documents are being ingested; send this one again in a little while.")
	case errors.Is(err, knowledge.ErrDuplicate):
		out := documentJSON(doc, false)
		out.Duplicate = true
		c.JSON(http.StatusOK, out)
	case fileUploadError(err) != nil:
		rerr := fileUploadError(err)
		abort(c, rerr.status, rerr.code, rerr.message)
	case errors.Is(err, knowledge.ErrTooLarge) && req.File != nil:
		rerr := fileTooLarge(fileLimit)
		abort(c, rerr.status, rerr.code, rerr.message)
	case errors.Is(err, knowledge.ErrEmpty):
		abort(c, http.StatusBadRequest, "empty_document", "The document has no text.")
	case errors.Is(err, knowledge.ErrTooDeep):
		abort(c, http.StatusBadRequest, "document_too_deep",
			"The HTML nests elements more than 512 levels deep, which chatpipe cannot read; flatten the markup or upload the text as .txt or .md.")
	case errors.Is(err, knowledge.ErrNotUTF8):
		abort(c, http.StatusBadRequest, "not_utf8",
			"The document is not UTF-8 text (another encoding, such as Latin-1 or UTF-16, or not text at all); save it as UTF-8 and upload it again.")
	case errors.Is(err, knowledge.ErrBinary):
		abort(c, http.StatusBadRequest, "binary_document", "The document is not text; upload "+supportedUploads+" files.")
	case errors.Is(err, knowledge.ErrTooLarge):
		abort(c, http.StatusRequestEntityTooLarge, "document_too_large",
			fmt.Sprintf("The document is larger than the limit of %d bytes.", limit))
	case errors.Is(err, knowledge.ErrUnsupportedType):
		abort(c, http.StatusUnsupportedMediaType, "unsupported_type", "Only PDF, Word (.docx), PowerPoint (.pptx), Excel (.xlsx), CSV, plain text, Markdown and HTML documents are supported.")
	default:
		h.internal(c, "ingest document", err)
	}
}

// readUpload reads a multipart upload: the "file" part and an optional
// "title" and "shared" parts. A text file may have at most limit bytes; a PDF, DOCX,
// PPTX, XLSX or CSV file (by extension, or by content without one) at
// most fileLimit and goes to the document parser.
func readUpload(c *gin.Context, limit, fileLimit int64) (req knowledge.IngestRequest, shared bool, rerr *requestError) {
	bodyLimit := uploadLimit(limit, fileLimit)
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, bodyLimit+64<<10)
	mr, err := c.Request.MultipartReader()
	if err != nil {
		return req, shared, &requestError{http.StatusBadRequest, "invalid_upload", "The upload is not a valid multipart form."}
	}
	gotFile := false
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			var maxErr *http.MaxBytesError
			if errors.As(err, &maxErr) {
				return req, shared, tooLarge(bodyLimit)
			}
			return req, shared, &requestError{http.StatusBadRequest, "invalid_upload", "The upload is not a valid multipart form."}
		}
		switch part.FormName() {
		case "file":
			if gotFile {
				return req, shared, &requestError{http.StatusBadRequest, "too_many_files",
					`The upload has more than one "file" field; send one file per upload.`}
			}
			name := knowledge.UploadName(part.FileName())
			ext := strings.ToLower(path.Ext(name))
			unsupported := &requestError{http.StatusUnsupportedMediaType, "unsupported_type",
				fmt.Sprintf("Files of type %s are not supported; upload %s files.", ext, supportedUploads)}
			if !knowledge.AcceptedName(name) { // before the body is read
				return req, shared, unsupported
			}
			data, err := io.ReadAll(io.LimitReader(part, bodyLimit+1))
			if err != nil {
				var maxErr *http.MaxBytesError
				if errors.As(err, &maxErr) {
					return req, shared, tooLarge(bodyLimit)
				}
				return req, shared, &requestError{http.StatusBadRequest, "invalid_upload", "The uploaded file could not be read."}
			}
			upload, err := knowledge.FileRequest(name, data)
			if err != nil {
				return req, shared, unsupported
			}
			switch {
			case upload.File != nil && int64(len(data)) > fileLimit:
				return req, shared, fileTooLarge(fileLimit)
			case upload.File == nil && int64(len(data)) > limit:
				return req, shared, tooLarge(limit)
			case upload.File == nil && ext == "":
				upload.MediaType = part.Header.Get("Content-Type")
			}
			req.File, req.Content, req.MediaType, req.Source, gotFile = upload.File, upload.Content, upload.MediaType, upload.Source, true
		case "title":
			data, _ := io.ReadAll(io.LimitReader(part, 4096))
			req.Title = strings.TrimSpace(string(data))
		case "shared":
			data, _ := io.ReadAll(io.LimitReader(part, 16))
			switch v := strings.ToLower(strings.TrimSpace(string(data))); v {
			case "on": // an HTML checkbox
				shared = true
			case "", "off":
				shared = false
			default:
				on, err := strconv.ParseBool(v)
				if err != nil {
					return req, shared, &requestError{http.StatusBadRequest, "invalid_field",
						`The "shared" field must be true or false.`}
				}
				shared = on
			}
		}
		part.Close()
	}
	if !gotFile {
		return req, shared, &requestError{http.StatusBadRequest, "missing_file", `The upload has no "file" field.`}
	}
	return req, shared, nil
}

func tooLarge(limit int64) *requestError {
	return &requestError{http.StatusRequestEntityTooLarge, "document_too_large",
		fmt.Sprintf("The document is larger than the limit of %d bytes.", limit)}
}

func (h *Handler) listDocuments(c *gin.Context) {
	limit, ok := queryInt(c, "limit", 50, 1, 500)
	if !ok {
		return
	}
	offset, ok := queryInt(c, "offset", 0, 0, 1<<31-1)
	if !ok {
		return
	}
	docs, total, err := h.deps.Knowledge.Documents(c.Request.Context(), tenant(c), limit, offset)
	if err != nil {
		h.internal(c, "list documents", err)
		return
	}
	out := make([]DocumentJSON, len(docs))
	for i, d := range docs {
		out[i] = documentJSON(d, false)
	}
	c.JSON(http.StatusOK, gin.H{"documents": out, "total": total})
}

func (h *Handler) getDocument(c *gin.Context) {
	d, err := h.deps.Knowledge.Document(c.Request.Context(), tenant(c), c.Param("id"))
	if errors.Is(err, knowledge.ErrNotFound) {
		abort(c, http.StatusNotFound, "document_not_found", "No document with id "+strconv.Quote(c.Param("id"))+".")
		return
	}
	if err != nil {
		h.internal(c, "get document", err)
		return
	}
	c.JSON(http.StatusOK, documentJSON(d, true))
}

// deleteDocument deletes one of the caller's documents, or a shared one
// when the caller's key may manage them (403 otherwise).
func (h *Handler) deleteDocument(c *gin.Context) {
	err := h.deps.Knowledge.DeleteDocument(c.Request.Context(), tenant(c), c.Param("id"))
	if errors.Is(err, knowledge.ErrForbidden) {
		if !managesShared(c) {
			abort(c, http.StatusForbidden, "forbidden",
				"This document is shared; this API key may not delete shared documents (auth.keys[].manage_shared).")
			return
		}
		err = h.deps.Knowledge.DeleteSharedDocument(c.Request.Context(), c.Param("id"))
	}
	if errors.Is(err, knowledge.ErrNotFound) {
		abort(c, http.StatusNotFound, "document_not_found", "No document with id "+strconv.Quote(c.Param("id"))+".")
		return
	}
	if err != nil {
		h.internal(c, "delete document", err)
		return
	}
	c.Status(http.StatusNoContent)
}

type searchRequest struct {
	Query string `json:"query"`
	TopK  *int   `json:"top_k"`
}

// SearchHitJSON is a hit-testing result.
type SearchHitJSON struct {
	ChunkID      string  `json:"chunk_id"`
	DocumentID   string  `json:"document_id"`
	Title        string  `json:"title"`
	Heading      string  `json:"heading,omitempty"`
	Page         int     `json:"page,omitempty"` // the page (PDF) or slide (PPTX) the chunk is on
	Content      string  `json:"content"`
	Score        float64 `json:"score"`
	KeywordScore float64 `json:"keyword_score"`
	VectorScore  float64 `json:"vector_score"`
	KeywordRank  int     `json:"keyword_rank"`
	VectorRank   int     `json:"vector_rank"`
}

// maxSearchTopK bounds hit testing.
const maxSearchTopK = 100

// search is hit testing: the same hybrid search the search plugin runs,
// without an LLM.
func (h *Handler) search(c *gin.Context) {
	var req searchRequest
	if rerr := decodeJSON(c, h.cfg().Limits.MaxBodyBytes, &req, false); rerr != nil {
		abort(c, rerr.status, rerr.code, rerr.message)
		return
	}
	if strings.TrimSpace(req.Query) == "" {
		abort(c, http.StatusBadRequest, "empty_query", `The search query is empty; put it in "query".`)
		return
	}
	// As long as a question may be (limits.max_question_chars).
	if n, limit := utf8.RuneCountInString(req.Query), h.cfg().Limits.MaxQuestionChars; limit > 0 && n > limit {
		abort(c, http.StatusBadRequest, "query_too_long", fmt.Sprintf("The search query is %d characters long; the limit is %d (limits.max_question_chars).", n, limit))
		return
	}
	topK := h.cfg().Knowledge.Search.TopK
	if req.TopK != nil {
		if *req.TopK < 1 || *req.TopK > maxSearchTopK {
			abort(c, http.StatusBadRequest, "invalid_top_k", fmt.Sprintf(`"top_k" must be from 1 to %d.`, maxSearchTopK))
			return
		}
		topK = *req.TopK
	}
	res, err := h.deps.Knowledge.Search(c.Request.Context(), retrieval.SearchRequest{TenantID: tenant(c), Query: req.Query, TopK: topK})
	if err != nil {
		h.internal(c, "search", err)
		return
	}
	hits := make([]SearchHitJSON, len(res.Hits))
	for i, x := range res.Hits {
		hits[i] = SearchHitJSON{ChunkID: x.ChunkID, DocumentID: x.DocumentID, Title: x.Title, Heading: x.Heading,
			Page: x.Page, Content: x.Content, Score: x.Score, KeywordScore: x.KeywordScore, VectorScore: x.VectorScore,
			KeywordRank: x.KeywordRank, VectorRank: x.VectorRank}
	}
	c.JSON(http.StatusOK, gin.H{"query": req.Query, "method": res.Method, "degraded": res.Degraded, "hits": hits})
}
