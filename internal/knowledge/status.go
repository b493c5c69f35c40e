package knowledge

import (
	"context"
	"errors"
)

// Document statuses. Only a ready document is searchable: a background
// ingest writes the chunks and flips the status in one transaction.
const (
	StatusProcessing = "processing"
	StatusReady      = "ready"
	StatusFailed     = "failed"
)

// SharedTenant owns the shared documents: every tenant lists, searches
// and reads them besides its own; only the keys allowed to manage them
// (auth.keys[].manage_shared) add or delete them. No API key may belong
// to it (config validation refuses the name).
const SharedTenant = "_shared"

// Progress is how far a background ingest is. Pages are those of a paged
// format (PDF), reported by its parser; chunks are counted as they are
// cut, embedded and written. A zero total means not known (yet).
type Progress struct {
	PagesDone      int
	PagesTotal     int
	ChunksTotal    int
	ChunksEmbedded int
	ChunksWritten  int
}

// PendingHash is the ContentHash a processing or failed document holds in
// place of one (the stores set it): unique per document and never the
// SHA-256 of any text, so it is no duplicate of anything.
func PendingHash(id string) string { return "pending:" + id }

// WithComputed returns doc with the fields a store computes from its
// content and chunks set: ContentHash, Bytes, Chunks and Embedded (every
// chunk has an embedding), and Warning cleared.
func WithComputed(doc Document, chunks []Chunk) Document {
	doc.ContentHash = ContentHash(doc.Content)
	doc.Bytes = len(doc.Content)
	doc.Chunks = len(chunks)
	doc.Embedded = len(chunks) > 0
	for _, c := range chunks {
		doc.Embedded = doc.Embedded && len(c.Embedding) > 0
	}
	doc.Warning = ""
	return doc
}

// progressReporter keeps an ingest's Progress and tells it to notify
// after each step; a nil notify makes every call a no-op.
type progressReporter struct {
	notify func(Progress)
	p      Progress
}

// pages records that done of total pages are parsed (for a parser of a
// paged format).
func (r *progressReporter) pages(done, total int) {
	r.p.PagesDone, r.p.PagesTotal = done, total
	r.send()
}

func (r *progressReporter) chunks(total int) { r.p.ChunksTotal = total; r.send() }
func (r *progressReporter) embedded(n int)   { r.p.ChunksEmbedded = n; r.send() }
func (r *progressReporter) written(n int)    { r.p.ChunksWritten = n; r.send() }

func (r *progressReporter) send() {
	if r.notify != nil {
		r.notify(r.p)
	}
}

// Claimed is a document a store's ClaimStale took, under its new claim.
type Claimed struct {
	ID    string
	Claim int64
}

// ClaimedDocuments reads the documents a store's ClaimStale took, each
// with the claim it was taken under (a read after the claim could only
// see a later one if the document went stale again meanwhile); those
// deleted meanwhile are left out. One whose read failed is returned all
// the same, with its ID, status and claim alone, and the errors joined:
// it is claimed, and its caller must run or release it.
func ClaimedDocuments(ctx context.Context, store interface {
	Document(ctx context.Context, id string) (Document, error)
}, claimed []Claimed) ([]Document, error) {
	docs := make([]Document, 0, len(claimed))
	var errs []error
	for _, c := range claimed {
		d, err := store.Document(ctx, c.ID)
		switch {
		case errors.Is(err, ErrNotFound):
			continue // deleted meanwhile
		case err != nil:
			// Claimed all the same: the caller must run it (its job reads
			// it again) or release it, not leave it to go stale.
			errs = append(errs, err)
			d = Document{ID: c.ID, Status: StatusProcessing}
		}
		d.Claim = c.Claim
		docs = append(docs, d)
	}
	return docs, errors.Join(errs...)
}
