// Package knowledge is chatpipe's knowledge base: documents cut into
// heading-aware chunks, indexed for keyword search (bm25 over a
// tokenisation that works for Chinese as well as English) and, when an
// embeddings endpoint is configured, for vector search, the two rankings
// fused by weighted reciprocal rank. Service is what the rest of chatpipe
// uses; Store is where an implementation (SQLite now, PostgreSQL later)
// plugs in, and knowledgetest is the suite every Store must pass.
package knowledge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors callers branch on (the HTTP handler maps them to 4xx).
var (
	ErrNotFound = errors.New("not found")
	// ErrDuplicate: a document with the same content is already stored;
	// the call returns that document alongside the error and stores nothing.
	ErrDuplicate = errors.New("a document with the same content already exists")
	// ErrAlreadyExists: AddDocument was given an ID another document has.
	ErrAlreadyExists = errors.New("document id already exists")
	// ErrEmpty: the document has no text (empty or only whitespace).
	ErrEmpty = errors.New("document is empty")
	// ErrBinary: the document is not text (invalid UTF-8, NUL bytes or
	// control characters).
	ErrBinary = errors.New("document is not text")
	// ErrNotUTF8: the document is text in another encoding than UTF-8
	// (Latin-1, UTF-16) or binary; errors wrapping it wrap ErrBinary too.
	ErrNotUTF8 = errors.New("not valid UTF-8")
	// ErrTooDeep: an HTML document nests elements deeper than the HTML
	// parser accepts (512).
	ErrTooDeep = errors.New("HTML is nested too deeply")
	// ErrTooLarge: the document exceeds knowledge.max_upload_bytes.
	ErrTooLarge = errors.New("document is too large")
	// ErrNeedsBackground: a file unpacks to more text than
	// IngestRequest.ForegroundTextBytes; nothing was stored. Hand the
	// request to IngestBackground.
	ErrNeedsBackground = errors.New("the file holds more text than an ingest answered at once may read")
	// ErrUnsupportedType: the media type is not plain text, Markdown or HTML.
	ErrUnsupportedType = errors.New("unsupported document type")
)

// DefaultTenant is the tenant of a request made without an API key (the
// open, local mode) and of documents stored before tenants existed. An
// empty tenant id anywhere in this package means DefaultTenant.
const DefaultTenant = "default"

// Media types Ingest understands; parameters such as charset are ignored.
const (
	MediaMarkdown = "text/markdown"
	MediaPlain    = "text/plain"
	MediaHTML     = "text/html"
)

// Document is one stored document. The store sets ContentHash, Bytes,
// Chunks, Embedded and CreatedAt; values passed in are ignored.
type Document struct {
	ID          string
	TenantID    string // whose document it is; only that tenant lists, searches and reads it
	Title       string
	Source      string // where it came from, e.g. an uploaded file name; may be empty
	MediaType   string // the media type it was uploaded as (MediaMarkdown, MediaPlain, MediaHTML, or a docparse one)
	Content     string // the indexed text (for HTML, the extracted text); empty in listings
	ContentHash string // ContentHash(Content): a tenant's documents are unique by it
	// FileHash is FileHash of the file (PDF, DOCX, ...) the document was
	// read from, TextHash of a text uploaded for the background, "" for a
	// text ingested at once; AddDocument and BeginDocument store it, one
	// processing or ready document per tenant and file, and
	// DocumentByFileHash finds it. Not read back with a document.
	FileHash  string
	Bytes     int  // len(Content)
	Chunks    int  // number of chunks
	Embedded  bool // every chunk has an embedding (false: keyword search only)
	CreatedAt time.Time

	// Status is StatusReady for a searchable document; StatusProcessing
	// while a background ingest runs (no content, no chunks yet) and
	// StatusFailed after one failed, with the reason in Error.
	Status   string
	Progress Progress // how far the background ingest is (zero for ready documents)
	Error    string   // why the ingest failed (StatusFailed only)
	// DuplicateOf is the id of the document whose text a failed ingest
	// found already stored (StatusFailed only; "" for other failures).
	DuplicateOf string
	Attempts    int // background ingests started for it (a restart starts another)
	// Claim names the background ingest that holds a processing document:
	// 1 when it is begun, one more at each ClaimStale, never reused. The
	// store's ingest writes take it and change nothing for a claim that is
	// not the latest (another process took the document over).
	Claim int64
	// AddedBy is the tenant that added it: TenantID for a tenant's own
	// documents, the uploader's tenant for a SharedTenant document. Set by
	// Document only ("" in listings).
	AddedBy string

	// Warning is set by Service.Ingest only (never stored): what went wrong
	// without failing the upload, e.g. why the document is keyword-only.
	Warning string
}

// Chunk is one passage of a document, the unit of retrieval.
type Chunk struct {
	ID         string
	DocumentID string
	Index      int    // 0-based position in the document
	Heading    string // heading path it sits under ("Guide > Install"), "" before the first heading
	Page       int    // 1-based page (PDF) or slide (PPTX) it is on; 0 when the source has no pages
	Content    string
	Tokens     int       // tokens.Estimate(Content)
	Embedding  []float32 // nil when not embedded
}

// Hit is a chunk found by a search, with its document's title.
type Hit struct {
	ChunkID    string
	DocumentID string
	Title      string
	Heading    string
	Page       int // the chunk's page, 0 when the source has no pages
	Content    string
	ChunkIndex int
	// Score: for KeywordSearch the negated bm25 (higher is better), for
	// VectorSearch the cosine similarity.
	Score float64
}

// Store keeps documents, their chunks and the keyword and vector indexes.
// Every method is safe for concurrent use. IDs are chosen by the caller and
// must not be empty; they are unique across tenants. A change is visible
// to every later search as soon as the call returns.
//
// Documents belong to a tenant: listing, deduplication and both searches
// see one tenant's documents only (an empty tenant id is DefaultTenant).
// Methods taking a document id do not check its tenant: Document returns
// the TenantID for the caller (Service) to check.
type Store interface {
	// AddDocument stores doc and its chunks (their DocumentID is set to
	// doc.ID) in one transaction, in doc.TenantID ("" = DefaultTenant).
	// When a document of that tenant has the same content, it returns that
	// document and ErrDuplicate and stores nothing; another tenant's
	// document with the same content is no duplicate. A doc.FileHash that
	// a processing or ready document of the tenant has is
	// ErrAlreadyExists.
	AddDocument(ctx context.Context, doc Document, chunks []Chunk) (Document, error)
	// Document returns a document of any tenant with its content and
	// TenantID, or ErrNotFound.
	Document(ctx context.Context, id string) (Document, error)
	// DocumentByHash returns the tenant's document whose ContentHash is
	// hash, or ErrNotFound.
	DocumentByHash(ctx context.Context, tenantID, hash string) (Document, error)
	// DocumentByFileHash returns the tenant's document with this
	// FileHash: processing, ready, or failed as a duplicate (DuplicateOf
	// set; other failures give their hash up), or ErrNotFound.
	DocumentByFileHash(ctx context.Context, tenantID, hash string) (Document, error)
	// Documents lists the tenant's documents newest first, without their
	// content, and the number the tenant has.
	Documents(ctx context.Context, tenantID string, limit, offset int) (docs []Document, total int, err error)
	// Chunks returns a document's chunks in order, without embeddings, or
	// ErrNotFound when the document does not exist.
	Chunks(ctx context.Context, documentID string) ([]Chunk, error)
	// DeleteDocument removes a document, its chunks and their index entries,
	// or returns ErrNotFound.
	DeleteDocument(ctx context.Context, id string) error
	// KeywordSearch ranks the chunks of the tenants given (one or more;
	// "" is DefaultTenant) together, by bm25 against the terms of query
	// (see Terms); any string is a valid query. Chunks matching none of
	// the terms are not returned. The limit applies to those tenants'
	// chunks: other tenants' chunks never take a place. One call covers a
	// tenant's own and the shared chunks, in one ranking query.
	KeywordSearch(ctx context.Context, tenantIDs []string, query string, limit int) ([]Hit, error)
	// KeywordSearchTerms is KeywordSearch for terms already made (as
	// Terms makes them: stems, bigrams), searched as they are, none left
	// out and none added: how a query's expansion (ExpansionTerms) is
	// searched. Scores are on KeywordSearch's scale.
	KeywordSearchTerms(ctx context.Context, tenantIDs, terms []string, limit int) ([]Hit, error)
	// VectorSearch ranks the tenant's embedded chunks by cosine similarity
	// to vector. Chunks whose embedding has another dimension, and chunks
	// with a similarity of 0 or less, are not returned. The limit applies
	// to the tenant's chunks, as for KeywordSearch. Scores are exact
	// cosines, and the SQLite and PostgreSQL real[] stores rank exactly;
	// with pgvector the candidates come from an approximate (HNSW) index,
	// so a true neighbour may be missing (recall below 1, traded for speed
	// by hnsw.ef_search, config postgres.hnsw_ef_search). The conformance
	// suite's data is small enough for every store to be exact on it.
	VectorSearch(ctx context.Context, tenantID string, vector []float32, limit int) ([]Hit, error)
	// BeginDocument stores doc (ID, TenantID, Title, Source, MediaType,
	// AddedBy, FileHash) as StatusProcessing with no content and no chunks, keeping
	// upload until FinishDocument or FailDocument so that an interrupted
	// ingest can start again. It is listed but never searched and is no
	// duplicate of anything; the version does not change.
	BeginDocument(ctx context.Context, doc Document, upload []byte) (Document, error)
	// Upload returns the upload kept for a processing document, or
	// ErrNotFound when the document is not processing.
	Upload(ctx context.Context, id string) ([]byte, error)
	// UpdateProgress records a processing document's progress and that its
	// ingest, the one holding claim, is alive (ClaimStale leaves it alone
	// for a while), or returns ErrNotFound when the document is not (any
	// longer) processing or claim is not its latest (another process took
	// it over: see Document.Claim). The writes below take claim alike.
	UpdateProgress(ctx context.Context, id string, claim int64, p Progress) error
	// ReleaseDocument marks a processing document's ingest as stopped, so
	// that the next ClaimStale takes it at once, and takes back the attempt
	// it counted: a clean stop (a restart, a rolling deploy) is not the
	// document's doing, while an ingest that never released its claim (the
	// process died) counts against max_attempts. ErrNotFound as above.
	ReleaseDocument(ctx context.Context, id string, claim int64) error
	// FinishDocument gives a processing document its content and chunks
	// and makes it StatusReady, all in one transaction: a search sees all
	// of its chunks or none. doc carries the final Title and Content. It
	// returns ErrDuplicate with the existing document when the tenant has
	// a ready document with that content (the processing one is left
	// processing), and ErrNotFound when the document is not processing or
	// doc.Claim is not its latest.
	FinishDocument(ctx context.Context, doc Document, chunks []Chunk) (Document, error)
	// DeleteFailed removes the failed attempts that doc, an upload just
	// accepted, replaces, and returns how many went: the documents of
	// doc's tenant added by doc's uploader (AddedBy; "" = the tenant) that
	// failed with no DuplicateOf, from the file named doc.Source or, when
	// Source is "" (a text), titled doc.Title. doc itself stays, and with
	// neither a source nor a title nothing goes. A file or text sent again
	// thus replaces its failed attempts instead of adding to them; one that
	// failed as a duplicate stays (it answers a copy sent again).
	DeleteFailed(ctx context.Context, doc Document) (int, error)
	// FailDocument marks a processing document StatusFailed with reason
	// (and duplicateOf, the document it duplicates, or "") and drops its
	// upload and, when duplicateOf is "", its file hash; it returns
	// ErrNotFound when the document is not processing.
	FailDocument(ctx context.Context, id string, claim int64, reason, duplicateOf string) error
	// ClaimStale returns at most limit processing documents
	// whose progress was last recorded before before, counting an attempt
	// for each, giving each a new Claim, zeroing its progress (the ingest starts over) and
	// recording it as alive now, so that no other caller
	// claims it until it goes stale again. The documents in except (the
	// caller's own, queued or running) are never claimed. With an error
	// it may return documents too: claimed, for the caller to run or
	// release (knowledge.ClaimedDocuments).
	ClaimStale(ctx context.Context, before time.Time, limit int, except []string) ([]Document, error)
	// Version changes on every add and delete, of any tenant, and never
	// repeats for one store; compare it for equality only (a response
	// cache keys on it).
	Version(ctx context.Context) (int64, error)
	// Close releases the store. Calling it again returns the first result.
	Close() error
}

// FileHash is the hex SHA-256 of an uploaded file's bytes: the identity of
// a file before it is parsed (see Store.DocumentByFileHash).
func FileHash(file []byte) string {
	sum := sha256.Sum256(file)
	return hex.EncodeToString(sum[:])
}

// TextHash is the identity of a text upload before it is read: the
// SHA-256 of its media type and bytes, kept apart from FileHash's (the
// same bytes uploaded as a CSV file are another document).
func TextHash(mediaType string, text []byte) string {
	h := sha256.New()
	h.Write([]byte("text\x00" + mediaType + "\x00"))
	h.Write(text)
	return hex.EncodeToString(h.Sum(nil))
}

// ContentHash is the hex SHA-256 of content: the identity a tenant's
// documents are deduplicated by.
func ContentHash(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

// CheckNewDocument rejects, before a store tries it, what the stores'
// schemas would reject less clearly: empty ids and chunk ids or indexes
// given twice.
func CheckNewDocument(doc Document, chunks []Chunk) error {
	if doc.ID == "" {
		return errors.New("empty document id")
	}
	ids := make(map[string]bool, len(chunks))
	indexes := make(map[int]bool, len(chunks))
	for _, c := range chunks {
		switch {
		case c.ID == "":
			return errors.New("empty chunk id")
		case ids[c.ID]:
			return fmt.Errorf("chunk id %s given twice", c.ID)
		case indexes[c.Index]:
			return fmt.Errorf("chunk index %d given twice", c.Index)
		}
		ids[c.ID], indexes[c.Index] = true, true
	}
	return nil
}
