package knowledge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cloudwego/eino/components/embedding"
	"github.com/google/uuid"
	"go.uber.org/zap"
)

// Service is the knowledge base as chatpipe uses it: ingestion (validate,
// chunk, embed, store) and hybrid search. It is safe for concurrent use.
type Service struct {
	store    Store
	embedder embedding.Embedder // nil: keyword search only
	opts     atomic.Pointer[Options]
	log      *zap.Logger
	// retryBackoff is the wait before the first retry of an embedding
	// batch; it doubles per retry (tests shorten it).
	retryBackoff time.Duration
	bg           *background // nil until StartBackground
	shared       atomic.Pointer[sharedState]
}

// NewService returns a service over store. embedder nil means keyword
// search only. The service owns store: Close closes it.
func NewService(store Store, embedder embedding.Embedder, opts Options, logger *zap.Logger) *Service {
	if logger == nil {
		logger = zap.NewNop()
	}
	s := &Service{store: store, embedder: embedder, log: logger.Named("knowledge"), retryBackoff: embedRetryBackoff}
	s.Reconfigure(opts)
	return s
}

// Reconfigure applies new chunking, upload-limit and search settings to
// later calls (config hot reload). The embedder is fixed at construction:
// a changed knowledge.embedding section takes a restart. A lead or name
// weight for a store with no title search (a store other than SQLite's
// and PostgreSQL's that is no TitleSearcher) is warned of: it does
// nothing there.
func (s *Service) Reconfigure(opts Options) {
	old := s.opts.Load()
	if _, ok := s.store.(TitleSearcher); !ok {
		// Warned of at start and on a reload that changes it, not on
		// every reload of a file that still sets it.
		was := SearchOptions{LeadWeight: -1, NameWeight: -1}
		if old != nil {
			was = old.Search
		}
		s.warnNoTitleSearch("lead_weight", opts.Search.LeadWeight, was.LeadWeight)
		s.warnNoTitleSearch("name_weight", opts.Search.NameWeight, was.NameWeight)
	}
	s.opts.Store(&opts)
}

// warnNoTitleSearch warns that the title-field weight key, set to now
// (and changed from was), does nothing with this store.
func (s *Service) warnNoTitleSearch(key string, now, was float64) {
	if now > 0 && now != was {
		s.log.Warn("knowledge.search."+key+" is ignored: this knowledge store has no title search", zap.Float64(key, now))
	}
}

func (s *Service) options() *Options { return s.opts.Load() }

// Embedding reports whether an embedder is configured (vector search on).
func (s *Service) Embedding() bool { return s.embedder != nil }

// Document returns the tenant's document, or a shared one, with its
// content, or ErrNotFound (also for another tenant's document: to a
// tenant, a document it does not own does not exist).
func (s *Service) Document(ctx context.Context, tenantID, id string) (Document, error) {
	doc, err := s.store.Document(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound) || (err == nil && !visibleTo(doc, tenantID)):
		// One message for both, whatever the store says.
		return Document{}, fmt.Errorf("knowledge: document %s: %w", id, ErrNotFound)
	case err != nil:
		return Document{}, err
	}
	return doc, nil
}

// Documents lists the tenant's documents and the shared ones newest
// first, without their content, and how many there are. limit is clamped
// to 1..1000 (0 means 50).
func (s *Service) Documents(ctx context.Context, tenantID string, limit, offset int) ([]Document, int, error) {
	switch {
	case limit <= 0:
		limit = 50
	case limit > 1000:
		limit = 1000
	}
	tenantID = cmp.Or(tenantID, DefaultTenant)
	if tenantID == SharedTenant {
		return s.store.Documents(ctx, tenantID, limit, max(offset, 0))
	}
	return s.documentsWithShared(ctx, tenantID, limit, max(offset, 0))
}

// Chunks returns the chunks of the tenant's document in order, or
// ErrNotFound.
func (s *Service) Chunks(ctx context.Context, tenantID, documentID string) ([]Chunk, error) {
	if _, err := s.Document(ctx, tenantID, documentID); err != nil {
		return nil, err
	}
	chunks, err := s.store.Chunks(ctx, documentID)
	if errors.Is(err, ErrNotFound) { // deleted meanwhile
		return nil, fmt.Errorf("knowledge: document %s: %w", documentID, ErrNotFound)
	}
	return chunks, err
}

// DeleteDocument removes the tenant's document and its chunks from every
// index at once, or returns ErrNotFound (also for another tenant's
// document, which is left alone). A shared document is ErrForbidden here
// (DeleteSharedDocument removes it).
func (s *Service) DeleteDocument(ctx context.Context, tenantID, id string) error {
	doc, err := s.Document(ctx, tenantID, id)
	if err != nil {
		return err
	}
	if doc.TenantID != cmp.Or(tenantID, DefaultTenant) {
		return fmt.Errorf("knowledge: delete shared document %s: %w", id, ErrForbidden)
	}
	// Document ids are never reused, so the document checked is the one
	// deleted.
	if err := s.store.DeleteDocument(ctx, id); err != nil {
		if errors.Is(err, ErrNotFound) { // deleted meanwhile
			return fmt.Errorf("knowledge: document %s: %w", id, ErrNotFound)
		}
		return err
	}
	if s.bg != nil {
		s.bg.stop(id) // its ingest, if it was processing here
	}
	s.log.Info("document deleted", zap.String("document_id", id), zap.String("tenant_id", doc.TenantID))
	return nil
}

// Version changes whenever a document is added or deleted; a cache of
// answers keys on it.
func (s *Service) Version(ctx context.Context) (int64, error) { return s.store.Version(ctx) }

// Close stops the background ingest (releasing the documents it had for
// the next run) and closes the store.
func (s *Service) Close() error {
	s.stopBackground()
	return s.store.Close()
}

// newDocumentID returns a time-ordered id (UUIDv7).
func newDocumentID() string {
	id, err := uuid.NewV7()
	if err != nil { // only when the random source fails
		return uuid.NewString()
	}
	return id.String()
}

func chunkIDFor(documentID string, index int) string { return fmt.Sprintf("%s-%d", documentID, index) }

// Embedding retries: a transient failure (429, 5xx, network) of one batch
// should not leave a large document keyword-only.
const (
	embedRetries      = 2
	embedRetryBackoff = 500 * time.Millisecond
	maxRetryWait      = 10 * time.Second
)

// embed embeds texts in batches of batch_size, retrying retryable
// failures; the vectors are converted to float32 and must share one
// dimension. done, when set, is told how many texts are embedded after
// each batch.
func (s *Service) embed(ctx context.Context, texts []string, retries int, done func(int)) ([][]float32, error) {
	batch := max(s.options().EmbedBatchSize, 1)
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += batch {
		part := texts[start:min(start+batch, len(texts))]
		vecs, err := s.embedBatch(ctx, part, retries)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
		if done != nil {
			done(len(out))
		}
	}
	for _, v := range out {
		if len(v) != len(out[0]) {
			return nil, fmt.Errorf("embeddings of one document differ in dimension (%d and %d)", len(out[0]), len(v))
		}
	}
	return out, nil
}

func (s *Service) embedBatch(ctx context.Context, texts []string, retries int) ([][]float32, error) {
	for attempt := 0; ; attempt++ {
		vecs, err := s.embedder.EmbedStrings(ctx, texts)
		if err == nil {
			if len(vecs) != len(texts) {
				return nil, fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(texts))
			}
			return toFloat32(vecs)
		}
		wait, ok := retryWait(err, attempt, retries, s.retryBackoff)
		if !ok || ctx.Err() != nil {
			return nil, err
		}
		s.log.Debug("embedding batch failed; retrying", zap.Error(err), zap.Duration("wait", wait))
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// retryWait says whether attempt (0-based) may be retried after err, and
// after how long: Retry-After when the endpoint sent one, else doubling.
func retryWait(err error, attempt, retries int, backoff time.Duration) (time.Duration, bool) {
	if attempt >= retries {
		return 0, false
	}
	pe := providerError(err)
	if pe == nil || !pe.Retryable {
		return 0, false
	}
	wait := backoff << attempt
	if pe.RetryAfter > 0 {
		wait = pe.RetryAfter
	}
	return min(wait, maxRetryWait), true
}

func toFloat32(vecs [][]float64) ([][]float32, error) {
	out := make([][]float32, len(vecs))
	for i, v := range vecs {
		if len(v) == 0 {
			return nil, errors.New("embedder returned an empty vector")
		}
		f := make([]float32, len(v))
		for j, x := range v {
			f[j] = float32(x)
		}
		out[i] = f
	}
	return out, nil
}
