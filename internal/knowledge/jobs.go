package knowledge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/internal/docparse"
)

// ErrBusy: the background queue is full; the upload was not stored and
// may be sent again later.
var ErrBusy = errors.New("too many documents are being ingested; try again shortly")

// errStore marks a failure of the store (not of the document) inside an
// ingest: the user sees a generic reason, the log the error.
var errStore = errors.New("storing the document failed")

// IsStoreError reports whether an ingest failed in the store (the
// database), not because of the document: the caller's problem, not the
// uploader's.
func IsStoreError(err error) bool { return errors.Is(err, errStore) }

// progressEvery bounds how often a background ingest writes its progress.
const progressEvery = 250 * time.Millisecond

// background runs background ingests: a fixed number of workers take
// document ids from queue; slots (queue plus workers) bound the jobs
// queued or running, so a burst of uploads is refused rather than piled
// up; a janitor keeps the jobs held here, queued or running, alive in the
// store and claims the ones a stopped or dead process left (ClaimStale).
type background struct {
	slots       chan struct{}
	queue       chan ingestJob
	staleAfter  time.Duration
	maxAttempts int

	ctx    context.Context // ends at Close: running ingests stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// held are the ingests this process has, by document id: queued (in
	// queue, stop nil) or running. The janitor keeps every one alive in
	// the store: a document waiting here longer than stale_after is no
	// process's leftover, to be claimed again (and failed for "stops"
	// that never happened).
	held map[string]heldJob
}

// ingestJob is a background ingest: its document, and the claim it holds
// on it (Document.Claim), which every write of the ingest names, so that
// one that lost the document to another process changes nothing.
type ingestJob struct {
	id    string
	claim int64
}

// heldJob is an ingest queued or under way here: its claim and latest
// progress, for the heartbeat, and, once running, how to stop it (its
// document was deleted).
type heldJob struct {
	claim    int64
	progress Progress
	stop     context.CancelCauseFunc // nil while queued
}

// enqueue holds job here and queues it; a slot must be taken first (then
// the send never blocks).
func (bg *background) enqueue(job ingestJob) {
	bg.mu.Lock()
	bg.held[job.id] = heldJob{claim: job.claim}
	bg.mu.Unlock()
	bg.queue <- job
}

// heldIDs are the documents queued or running here, which a claim of
// stale ones leaves alone: one whose heartbeat could not be written (a
// database under strain) is still ours, not to be queued twice and have
// an attempt counted for a stop that never happened.
func (bg *background) heldIDs() []string {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	return slices.Collect(maps.Keys(bg.held))
}

// drop forgets id: its job ended (or was never run, the service stopping).
func (bg *background) drop(id string) {
	bg.mu.Lock()
	delete(bg.held, id)
	bg.mu.Unlock()
}

// errGone ends an ingest whose document was deleted (here or, seen when
// its progress could not be written, on another replica).
var errGone = errors.New("the document is gone")

// stop ends id's ingest if this process runs it.
func (bg *background) stop(id string) {
	bg.mu.Lock()
	job := bg.held[id]
	bg.mu.Unlock()
	if job.stop != nil {
		job.stop(errGone)
	}
}

// StartBackground starts the background ingest (knowledge.ingest:
// workers, queue, stale_after, max_attempts), which Close stops. Without
// it, IngestBackground refuses and processing documents wait for a
// process that runs it: a command that only adds documents (chatpipe
// ingest) never resumes a server's work. It resumes at once the documents
// a previous run released, and the others once they go stale.
func (s *Service) StartBackground() {
	if s.bg != nil {
		return
	}
	cfg := s.options().Ingest
	workers, queue := max(cfg.Workers, 1), max(cfg.Queue, 0)
	bg := &background{
		slots:       make(chan struct{}, workers+queue),
		queue:       make(chan ingestJob, workers+queue),
		staleAfter:  cmp.Or(cfg.StaleAfter, time.Minute),
		maxAttempts: max(cfg.MaxAttempts, 1),
		held:        map[string]heldJob{},
	}
	bg.ctx, bg.cancel = context.WithCancel(context.Background())
	s.bg = bg
	for range workers {
		bg.wg.Go(func() {
			for {
				select {
				case <-bg.ctx.Done():
					return
				case job := <-bg.queue:
					s.runJob(job)
					bg.drop(job.id)
					<-bg.slots
				}
			}
		})
	}
	bg.wg.Go(s.janitor)
}

// stopBackground stops the workers and the janitor; the documents they
// had (running or queued) are released for the next run to resume.
func (s *Service) stopBackground() {
	bg := s.bg
	if bg == nil {
		return
	}
	bg.cancel()
	bg.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		select {
		case job := <-bg.queue:
			bg.drop(job.id)
			s.release(ctx, job)
		default:
			return
		}
	}
}

// release marks job's ingest as stopped, so that the next run takes it
// at once instead of after stale_after (unless another process took it
// over meanwhile: it is that one's).
func (s *Service) release(ctx context.Context, job ingestJob) {
	if err := s.store.ReleaseDocument(ctx, job.id, job.claim); err != nil && !errors.Is(err, ErrNotFound) {
		s.log.Warn("could not release an interrupted ingest; it resumes once stale", zap.String("document_id", job.id), zap.Error(err))
	}
}

// releaseStopped releases job's ingest under a context of its own, so
// that it is released even as the service stops (its context done).
func (s *Service) releaseStopped(job ingestJob) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.release(ctx, job)
}

// IngestBackground stores req as a processing document and queues its
// ingest; the document's status, progress and error tell how it goes. A
// wrong size or media type is refused at once, as by Ingest; a full
// queue is ErrBusy. A text is checked as Ingest checks it (not text, no
// text: refused at once). What only the ingest finds (a duplicate,
// a broken file) makes the document failed, with the reason.
func (s *Service) IngestBackground(ctx context.Context, req IngestRequest) (Document, error) {
	bg := s.bg
	if bg == nil {
		return Document{}, errors.New("knowledge: background ingest is not running")
	}
	upload, mediaType, err := s.checkUpload(ctx, req)
	if err != nil || mediaType == "" {
		return Document{}, err
	}
	if req.File == nil {
		if existing, err := s.textDuplicate(ctx, req, mediaType); err != nil || existing.ID != "" {
			return existing, err
		}
	}
	// The same file or text, being ingested or ingested: known before it
	// is read, by its bytes (textDuplicate finds a stored text by its
	// normalised text; the same text sent again while the first is
	// processing is found here). The same text from another file is found
	// once parsed.
	fileHash := FileHash(upload)
	if req.File == nil {
		fileHash = TextHash(mediaType, upload)
	}
	if existing, err := s.fileDuplicate(ctx, cmp.Or(req.TenantID, DefaultTenant), fileHash); err != nil || existing.ID != "" {
		return existing, err
	}
	select {
	case bg.slots <- struct{}{}:
	default:
		return Document{}, ErrBusy
	}
	doc, err := s.store.BeginDocument(ctx, Document{
		ID:        newDocumentID(),
		TenantID:  cmp.Or(req.TenantID, DefaultTenant),
		AddedBy:   req.AddedBy,
		Title:     sentTitle(req.Title),
		Source:    strings.TrimSpace(req.Source),
		MediaType: mediaType,
		FileHash:  fileHash,
	}, upload)
	if err != nil {
		<-bg.slots
		return s.lostFileRace(ctx, cmp.Or(req.TenantID, DefaultTenant), fileHash, err)
	}
	bg.enqueue(ingestJob{doc.ID, doc.Claim}) // never blocks: the slot taken is room in the queue
	s.replaceFailed(ctx, doc)
	s.log.Info("document queued for ingest", zap.String("document_id", doc.ID), zap.String("tenant_id", doc.TenantID),
		zap.Int("bytes", len(upload)))
	return doc, nil
}

// sentTitle is the title a background upload is stored with until its
// text is read: the one sent, its spaces collapsed ("" when none was).
func sentTitle(title string) string { return strings.Join(strings.Fields(title), " ") }

// replaceFailed removes the failed attempts at doc's file (by its name; a
// text's by its title) by the same uploader, which the upload of doc,
// accepted, now replaces (see Store.DeleteFailed): sending a file again
// after it failed leaves one entry, not one more each time. Its failure
// is logged; the upload stands.
func (s *Service) replaceFailed(ctx context.Context, doc Document) {
	n, err := s.store.DeleteFailed(ctx, doc)
	switch {
	case err != nil:
		s.log.Warn("could not remove the failed attempts of a file sent again", zap.String("document_id", doc.ID), zap.Error(err))
	case n > 0:
		s.log.Info("failed attempts of a file sent again were removed", zap.String("document_id", doc.ID),
			zap.String("tenant_id", doc.TenantID), zap.String("source", doc.Source), zap.Int("removed", n))
	}
}

// fileDuplicate returns, with ErrDuplicate, the tenant's document of the
// file whose FileHash is hash: processing or ready, or, for a file that
// failed as a duplicate of another (a re-saved copy), that other one. A
// zero Document and nil when there is none.
func (s *Service) fileDuplicate(ctx context.Context, tenantID, hash string) (Document, error) {
	existing, err := s.store.DocumentByFileHash(ctx, tenantID, hash)
	switch {
	case errors.Is(err, ErrNotFound):
		return Document{}, nil
	case err != nil:
		return Document{}, err
	case existing.Status != StatusFailed:
		return existing, ErrDuplicate
	}
	if existing.DuplicateOf != "" {
		switch original, err := s.store.Document(ctx, existing.DuplicateOf); {
		case err == nil:
			return original, ErrDuplicate
		case !errors.Is(err, ErrNotFound):
			return Document{}, err
		}
	}
	// The document it duplicated is gone, or it failed otherwise and kept
	// its hash (failed by a replica older than duplicate_of, during a
	// rolling upgrade): nothing refuses the file, and the stale failed
	// entry, which holds the file's hash, goes.
	if err := s.store.DeleteDocument(ctx, existing.ID); err != nil && !errors.Is(err, ErrNotFound) {
		return Document{}, err
	}
	s.log.Info("a stale failed entry of the file sent again was removed", zap.String("document_id", existing.ID),
		zap.String("tenant_id", existing.TenantID), zap.String("duplicate_of", existing.DuplicateOf))
	return Document{}, nil
}

// lostFileRace turns a store's ErrAlreadyExists for a document of the file
// whose FileHash is hash into the document that won (its hash is unique:
// the same file was begun or added meanwhile) with ErrDuplicate; any
// other err comes back as it is.
func (s *Service) lostFileRace(ctx context.Context, tenantID, hash string, err error) (Document, error) {
	if errors.Is(err, ErrAlreadyExists) && hash != "" {
		// fileDuplicate answers a stored copy with ErrDuplicate.
		if existing, ferr := s.fileDuplicate(ctx, tenantID, hash); errors.Is(ferr, ErrDuplicate) {
			return existing, ErrDuplicate
		}
	}
	return Document{}, err
}

// checkUpload refuses at once what a background ingest would only fail
// later for (too large, an unknown type) and returns the bytes to keep
// and their media type: a file's (PDF, DOCX, ...) from its name and first
// bytes, a text's from its declared type or extension.
func (s *Service) checkUpload(_ context.Context, req IngestRequest) ([]byte, string, error) {
	cfg := s.options()
	if req.File != nil {
		if limit := cfg.MaxFileBytes; limit > 0 && int64(len(req.File)) > limit {
			return nil, "", fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(req.File), limit)
		}
		mediaType, err := docparse.Detect(req.Source, req.File)
		if err != nil {
			return nil, "", err
		}
		return req.File, mediaType, nil
	}
	if limit := cfg.MaxUploadBytes; limit > 0 && int64(len(req.Content)) > limit {
		return nil, "", fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(req.Content), limit)
	}
	mediaType, err := resolveMediaType(req.MediaType, req.Source)
	if err != nil {
		return nil, "", err
	}
	return []byte(req.Content), mediaType, nil
}

// textDuplicate checks a text upload before anything is stored, as
// Ingest does (not text, no text, HTML nested too deep: refused at once,
// not accepted and then failed), and finds the document it duplicates
// (returned with ErrDuplicate, as Ingest does): its text is the content
// normalised, cheap to compute, so a second upload of the same file is
// answered at once instead of queued and then failed. Other formats are
// checked and compared once parsed, in the background.
func (s *Service) textDuplicate(ctx context.Context, req IngestRequest, mediaType string) (Document, error) {
	if mediaType != MediaPlain && mediaType != MediaMarkdown && mediaType != MediaHTML {
		return Document{}, nil
	}
	text, err := readText(req.Content, mediaType)
	if err != nil {
		return Document{}, err
	}
	existing, err := s.store.DocumentByHash(ctx, cmp.Or(req.TenantID, DefaultTenant), ContentHash(text))
	switch {
	case err == nil:
		return existing, ErrDuplicate
	case errors.Is(err, ErrNotFound):
		return Document{}, nil
	}
	return Document{}, err
}

// runJob ingests one processing document into itself, then makes it
// ready, or failed with a reason a user can act on.
func (s *Service) runJob(job ingestJob) {
	bg := s.bg
	ctx := bg.ctx
	id := job.id
	// Stopping (a job cut short, or taken from the queue as the service
	// stops): released, its attempt given back.
	released := false
	defer func() {
		if ctx.Err() != nil && !released {
			s.releaseStopped(job)
		}
	}()
	// A read the store failed (a dropped connection, not a deleted
	// document) is no stop of the server: the document is given back at
	// once with its attempt, and the next claim tries again, rather than
	// waiting out stale_after and being charged for a stop that never was.
	retryLater := func(what string, err error) {
		s.log.Warn("background ingest: could not "+what+"; it is tried again", zap.String("document_id", id), zap.Error(err))
		s.releaseStopped(job)
		released = true
	}
	doc, err := s.store.Document(ctx, id)
	if err != nil && !errors.Is(err, ErrNotFound) && ctx.Err() == nil {
		retryLater("read the document", err)
		return
	}
	if err != nil || doc.Status != StatusProcessing || doc.Claim != job.claim {
		return // deleted, or taken by another process meanwhile (or stopping: above)
	}
	if doc.Attempts > bg.maxAttempts {
		times := fmt.Sprintf("%d times", doc.Attempts-1)
		if doc.Attempts-1 == 1 {
			times = "once"
		}
		s.fail(job, "The server stopped "+times+" while ingesting this document; upload it again.")
		return
	}
	upload, err := s.store.Upload(ctx, id)
	if err != nil {
		if !errors.Is(err, ErrNotFound) && ctx.Err() == nil {
			retryLater("read the upload", err)
		}
		return
	}
	// The job's own context: deleting the document stops its ingest.
	jobCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	bg.mu.Lock()
	bg.held[id] = heldJob{claim: job.claim, stop: stop}
	bg.mu.Unlock()

	var lastWrite time.Time
	req := IngestRequest{TenantID: doc.TenantID, Title: doc.Title, Source: doc.Source, MediaType: doc.MediaType,
		Progress: func(p Progress) {
			bg.mu.Lock()
			bg.held[id] = heldJob{claim: job.claim, progress: p, stop: stop}
			bg.mu.Unlock()
			if time.Since(lastWrite) < progressEvery {
				return
			}
			lastWrite = time.Now()
			switch err := s.store.UpdateProgress(jobCtx, id, job.claim, p); {
			case errors.Is(err, ErrNotFound):
				stop(errGone) // deleted meanwhile, maybe by another replica, or taken over by one
			case err != nil && jobCtx.Err() == nil:
				s.log.Warn("background ingest: record progress", zap.String("document_id", id), zap.Error(err))
			}
		}}
	if isFileMedia(doc.MediaType) {
		req.File, req.MediaType = upload, ""
	} else {
		req.Content = string(upload)
	}
	stored, err := s.ingestAs(jobCtx, req, s.embedder != nil, job)
	switch {
	case err == nil:
		if stored.Warning != "" {
			s.log.Warn("background ingest: "+stored.Warning, zap.String("document_id", id))
		}
	case ctx.Err() != nil:
		// Released as runJob returns.
	case errors.Is(context.Cause(jobCtx), errGone):
		s.log.Info("background ingest stopped: the document was deleted or taken over by another process", zap.String("document_id", id))
	case errors.Is(err, ErrDuplicate):
		s.failAs(job, fmt.Sprintf("The same content is already stored as %q (document %s).", stored.Title, stored.ID), stored.ID)
	case errors.Is(err, ErrNotFound):
		// Deleted, finished or taken over by another process meanwhile.
	case errors.Is(err, errStore):
		s.log.Error("background ingest failed", zap.String("document_id", id), zap.Error(err))
		s.fail(job, "Storing the document failed; see the server log, then upload it again.")
	default:
		s.fail(job, Reason(err))
	}
}

// fail marks job's document failed with reason (logged too).
func (s *Service) fail(job ingestJob, reason string) { s.failAs(job, reason, "") }

// failAs is fail naming the document job's duplicates ("" for none). A
// job that lost its claim fails nothing: the document is another
// process's now.
func (s *Service) failAs(job ingestJob, reason, duplicateOf string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.bg.ctx), 5*time.Second)
	defer cancel()
	switch err := s.store.FailDocument(ctx, job.id, job.claim, reason, duplicateOf); {
	case err == nil:
		s.log.Info("background ingest failed", zap.String("document_id", job.id), zap.String("reason", reason))
	case errors.Is(err, ErrNotFound):
		s.log.Info("background ingest failed, but the document is no longer its to fail (deleted, or taken over by another process)",
			zap.String("document_id", job.id), zap.String("reason", reason))
	default:
		s.log.Error("background ingest: mark failed", zap.String("document_id", job.id), zap.String("reason", reason), zap.Error(err))
	}
}

// Reason is what the user reads about a document that could not be
// ingested: the error of the document's own check or parser, as a
// sentence (a failed background ingest's error, chatpipe ingest's
// refusals).
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrEmpty):
		return "The document has no text."
	}
	msg := strings.TrimPrefix(err.Error(), "knowledge: ")
	msg = capitalize(msg)
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}

// janitor keeps the ingests held here (queued or running) alive in the
// store and claims stale ones (those of a process that stopped or died),
// as slots allow.
func (s *Service) janitor() {
	bg := s.bg
	tick := time.NewTicker(max(bg.staleAfter/3, 10*time.Millisecond))
	defer tick.Stop()
	for {
		s.claimStale()
		select {
		case <-bg.ctx.Done():
			return
		case <-tick.C:
		}
		bg.mu.Lock()
		alive := maps.Clone(bg.held)
		bg.mu.Unlock()
		for id, job := range alive {
			// Each heartbeat waits a third of stale_after at most: a
			// document being finished holds its row locked for as long as
			// its chunks take to write (PostgreSQL), and the documents
			// queued behind it must not go stale waiting for it.
			ctx, cancel := context.WithTimeout(bg.ctx, bg.staleAfter/3)
			err := s.store.UpdateProgress(ctx, id, job.claim, job.progress)
			cancel()
			switch {
			case errors.Is(err, ErrNotFound):
				// Deleted (maybe on another replica) or taken over by
				// another replica (its heartbeats failed too long) while
				// its ingest waits, say on an embedding call: stop it.
				// (Finished just now, it has nothing left to stop.)
				bg.stop(id)
			case errors.Is(err, context.DeadlineExceeded) && bg.ctx.Err() == nil:
				s.log.Debug("background ingest: heartbeat waited too long (the document is being written?)", zap.String("document_id", id))
			case err != nil && bg.ctx.Err() == nil:
				s.log.Warn("background ingest: heartbeat", zap.String("document_id", id), zap.Error(err))
			}
		}
	}
}

// claimStale queues the stale processing documents there are free slots
// for. The slots are taken after the claim, not held during it, so that
// uploads meanwhile are not refused; a claimed document that then finds
// no slot (uploads took them) is released for a later claim.
func (s *Service) claimStale() {
	bg := s.bg
	free := cap(bg.slots) - len(bg.slots)
	if free <= 0 {
		return
	}
	docs, err := s.store.ClaimStale(bg.ctx, time.Now().Add(-bg.staleAfter), free, bg.heldIDs())
	if err != nil && bg.ctx.Err() == nil {
		s.log.Warn("background ingest: claim stale documents", zap.Error(err))
	}
	for _, d := range docs {
		select {
		case bg.slots <- struct{}{}:
			s.log.Info("resuming an interrupted ingest", zap.String("document_id", d.ID), zap.Int("attempt", d.Attempts))
			bg.enqueue(ingestJob{d.ID, d.Claim})
		default: // given back even when the service is stopping meanwhile
			s.releaseStopped(ingestJob{d.ID, d.Claim})
		}
	}
}
