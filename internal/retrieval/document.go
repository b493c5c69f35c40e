package retrieval

import (
	"context"
	"errors"
)

// DocumentReader is implemented by knowledge bases that can return a whole
// document's text, which the fetch_document tool reads. It is an optional
// extension of Knowledge (check with a type assertion), so search-only
// knowledge bases and test fakes need not implement it.
type DocumentReader interface {
	// ReadDocument returns the tenant's document ("" = the default
	// tenant), or an error wrapping ErrDocumentNotFound — also for another
	// tenant's document, which to this tenant does not exist.
	ReadDocument(ctx context.Context, tenantID, id string) (Document, error)
}

// Document is the text of one knowledge base document.
type Document struct {
	ID      string
	Title   string
	Source  string // where it came from, e.g. an uploaded file name; may be empty
	Content string // the indexed text (for HTML, the extracted text)
}

// ErrDocumentNotFound is wrapped by DocumentReader errors for a document
// the tenant does not have.
var ErrDocumentNotFound = errors.New("document not found")
