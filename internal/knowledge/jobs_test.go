package knowledge_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/docparse/docparsetest"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/knowledge/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/retrieval"

	_ "modernc.org/sqlite"
)

// backgroundService is a started service over the SQLite file at path,
// embedding through srv; the caller closes it.
func backgroundService(t *testing.T, path string, srv *knowledgetest.EmbeddingServer, staleAfter time.Duration) *knowledge.Service {
	t.Helper()
	store, err := sqlitestore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	return backgroundServiceOver(t, store, srv, staleAfter)
}

// backgroundServiceOver is backgroundService over store.
func backgroundServiceOver(t *testing.T, store knowledge.Store, srv *knowledgetest.EmbeddingServer, staleAfter time.Duration) *knowledge.Service {
	t.Helper()
	cfg := testConfig()
	cfg.EmbedBatchSize = 2
	cfg.Ingest = knowledge.IngestOptions{Workers: 1, Queue: 2, StaleAfter: staleAfter, MaxAttempts: 3}
	emb, err := knowledge.NewEmbedder(knowledge.EmbeddingOptions{Provider: "openai", BaseURL: srv.BaseURL(), Model: "hash-embed",
		APIKey: "sk-test", Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	svc := knowledge.NewService(store, emb, cfg, nil)
	svc.StartBackground()
	return svc
}

func longMarkdown(word string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# All about the %s\n\n", word)
	for i := range 8 {
		fmt.Fprintf(&b, "## Section %d\n\n%s\n\n", i, strings.Repeat("The "+word+" is described here at length. ", 40))
	}
	return b.String()
}

// waitFor polls the document until ok accepts it.
func waitFor(t *testing.T, svc *knowledge.Service, id string, ok func(knowledge.Document) bool) knowledge.Document {
	t.Helper()
	return waitRead(t, func(ctx context.Context) (knowledge.Document, error) {
		return svc.Document(ctx, knowledge.DefaultTenant, id)
	}, id, ok)
}

// waitRead polls read until ok accepts the document it reads.
func waitRead(t *testing.T, read func(context.Context) (knowledge.Document, error), id string, ok func(knowledge.Document) bool) knowledge.Document {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, err := read(t.Context())
		if err != nil {
			t.Fatalf("Document: %v", err)
		}
		if ok(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("document %s never got there: %+v", id, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Close stops the workers (goleak checks none is left) and releases the
// document being ingested: the next service resumes it at once, long
// before it would count as stale.
func TestCloseReleasesARunningIngestAndTheNextStartResumesIt(t *testing.T) {
	srv := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 16})
	gate := make(chan struct{})
	srv.Hold(gate)
	path := filepath.Join(t.TempDir(), "chatpipe.db")

	first := backgroundService(t, path, srv, time.Hour)
	doc, err := first.IngestBackground(t.Context(), knowledge.IngestRequest{Content: longMarkdown("axolotl"), Source: "axolotl.md"})
	if err != nil || doc.Status != knowledge.StatusProcessing {
		t.Fatalf("IngestBackground = %+v, %v", doc, err)
	}
	waitFor(t, first, doc.ID, func(d knowledge.Document) bool { return d.Progress.ChunksTotal > 0 })
	if err := first.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Resumed (under a new claim), it is released again by the next stop:
	// the release names the resumed ingest's claim, not the first one's.
	second := backgroundService(t, path, srv, time.Hour)
	waitFor(t, second, doc.ID, func(d knowledge.Document) bool { return d.Claim == 2 && d.Progress.ChunksTotal > 0 })
	if err := second.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	close(gate)

	third := backgroundService(t, path, srv, time.Hour)
	defer third.Close()
	ready := waitFor(t, third, doc.ID, func(d knowledge.Document) bool { return d.Status != knowledge.StatusProcessing })
	if ready.Status != knowledge.StatusReady || !ready.Embedded || ready.Title != "All about the axolotl" {
		t.Fatalf("resumed document = %+v", ready)
	}
	res, err := third.Search(t.Context(), retrieval.SearchRequest{Query: "axolotl"})
	if err != nil || len(res.Hits) == 0 || res.Hits[0].DocumentID != doc.ID {
		t.Errorf("search = %+v, %v", res.Hits, err)
	}
}

// A document whose ingest keeps dying with its server (a document that
// crashes it, say) is failed after max_attempts, with a reason, instead
// of being retried for ever. (A clean stop gives its attempt back: each
// stop here is made a death by counting that attempt again.)
func TestADocumentInterruptedTooOftenFails(t *testing.T) {
	srv := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 16})
	gate := make(chan struct{})
	defer close(gate)
	srv.Hold(gate)
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	svc := backgroundService(t, path, srv, time.Hour)
	doc, err := svc.IngestBackground(t.Context(), knowledge.IngestRequest{Content: longMarkdown("tapir"), Source: "tapir.md"})
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 3; attempt++ { // each cut short
		waitFor(t, svc, doc.ID, func(d knowledge.Document) bool { return d.Attempts == attempt && d.Progress.ChunksTotal > 0 })
		if err := svc.Close(); err != nil {
			t.Fatal(err)
		}
		dieAfterClose(t, path, doc.ID)
		svc = backgroundService(t, path, srv, time.Hour)
	}
	defer svc.Close()
	failed := waitFor(t, svc, doc.ID, func(d knowledge.Document) bool { return d.Status != knowledge.StatusProcessing })
	if failed.Status != knowledge.StatusFailed || !strings.Contains(failed.Error, "stopped 3 times") {
		t.Fatalf("document = %+v; want failed after 3 interrupted attempts", failed)
	}
}

// dieAfterClose makes a clean stop of id's ingest look like the death of
// its process: the attempt the stop gave back is counted again.
func dieAfterClose(t *testing.T, path, id string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE knowledge_ingest SET attempts = attempts + 1 WHERE document_id = ?`, id); err != nil {
		t.Fatal(err)
	}
}

func TestIngestBackgroundRefusesWhatItCanTellAtOnce(t *testing.T) {
	srv := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 16})
	svc := backgroundService(t, filepath.Join(t.TempDir(), "chatpipe.db"), srv, time.Hour)
	defer svc.Close()
	for _, tc := range []struct {
		req  knowledge.IngestRequest
		want error
	}{
		{knowledge.IngestRequest{Content: strings.Repeat("a", 3<<20)}, knowledge.ErrTooLarge},
		{knowledge.IngestRequest{Content: "x", MediaType: "image/png"}, knowledge.ErrUnsupportedType},
	} {
		if _, err := svc.IngestBackground(t.Context(), tc.req); !errors.Is(err, tc.want) {
			t.Errorf("IngestBackground: %v, want %v", err, tc.want)
		}
	}
	if _, total, _ := svc.Documents(t.Context(), knowledge.DefaultTenant, 10, 0); total != 0 {
		t.Errorf("%d documents stored after refusals", total)
	}
}

// A file is one document whichever way it came first: added at once (a
// small upload, chatpipe ingest) or in the background, the same bytes
// again are its duplicate before they are parsed.
func TestTheSameFileIsADuplicateWhicheverWayItCameFirst(t *testing.T) {
	srv := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 16})
	svc := backgroundService(t, filepath.Join(t.TempDir(), "chatpipe.db"), srv, time.Hour)
	defer svc.Close()
	pdf := docparsetest.PDF(t, "The lighthouse keeper writes the log at dusk.")
	first, err := svc.Ingest(t.Context(), knowledge.IngestRequest{File: pdf, Source: "log.pdf"})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := svc.IngestBackground(t.Context(), knowledge.IngestRequest{File: pdf, Source: "again.pdf"}); !errors.Is(err, knowledge.ErrDuplicate) || d.ID != first.ID {
		t.Errorf("the same file in the background: %+v, %v; want a duplicate of %s", d, err, first.ID)
	}
	if d, err := svc.Ingest(t.Context(), knowledge.IngestRequest{File: pdf, Source: "again.pdf"}); !errors.Is(err, knowledge.ErrDuplicate) || d.ID != first.ID {
		t.Errorf("the same file at once: %+v, %v; want a duplicate of %s", d, err, first.ID)
	}
}

// Deleting a document being ingested stops its ingest at once: the one
// worker is free for the next document although the first one's
// embeddings never came back.
func TestDeletingAProcessingDocumentStopsItsIngest(t *testing.T) {
	srv := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 16})
	gate := make(chan struct{})
	srv.Hold(gate)
	defer close(gate)
	svc := backgroundService(t, filepath.Join(t.TempDir(), "chatpipe.db"), srv, time.Hour)
	defer svc.Close()
	first, err := svc.IngestBackground(t.Context(), knowledge.IngestRequest{Content: longMarkdown("axolotl"), Source: "axolotl.md"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, svc, first.ID, func(d knowledge.Document) bool { return d.Progress.ChunksTotal > 0 }) // held in embedding
	if err := svc.DeleteDocument(t.Context(), "", first.ID); err != nil {
		t.Fatal(err)
	}
	second, err := svc.IngestBackground(t.Context(), knowledge.IngestRequest{Content: longMarkdown("quokka"), Source: "quokka.md"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, svc, second.ID, func(d knowledge.Document) bool { return d.Progress.ChunksTotal > 0 })
}

// A failed document that kept its file's hash without naming what it
// duplicates (failed by a replica older than duplicate_of, during a
// rolling upgrade) does not lock the file out: the file sent again is
// ingested, and the stale entry goes.
func TestAFailedEntryLeftByAnOlderReplicaDoesNotLockTheFileOut(t *testing.T) {
	srv := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 16})
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	svc := backgroundService(t, path, srv, time.Hour)
	defer svc.Close()
	scan := docparsetest.ScannedPDF(t, 1) // fails: no text
	failed, err := svc.IngestBackground(t.Context(), knowledge.IngestRequest{File: scan, Source: "scan.pdf"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, svc, failed.ID, func(d knowledge.Document) bool { return d.Status == knowledge.StatusFailed })
	// What the older replica's failure left: the hash still set.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE knowledge_documents SET file_hash = ? WHERE id = ?`, knowledge.FileHash(scan), failed.ID); err != nil {
		t.Fatal(err)
	}
	again, err := svc.IngestBackground(t.Context(), knowledge.IngestRequest{File: scan, Source: "scan.pdf"})
	if err != nil || again.ID == failed.ID || again.Status != knowledge.StatusProcessing {
		t.Fatalf("the file sent again = %+v, %v; want a new processing document", again, err)
	}
	if _, err := svc.Document(t.Context(), "", failed.ID); !errors.Is(err, knowledge.ErrNotFound) {
		t.Errorf("the stale failed entry: %v; want it gone", err)
	}
}

// A document deleted on another replica while its ingest waits (here on
// embeddings that never come) is noticed by the heartbeat: the ingest
// stops and the one worker is free again.
func TestADeleteOnAnotherReplicaStopsTheIngestAtTheNextHeartbeat(t *testing.T) {
	srv := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 16})
	gate := make(chan struct{})
	srv.Hold(gate)
	defer close(gate)
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	svc := backgroundService(t, path, srv, 300*time.Millisecond) // a heartbeat every 100 ms
	defer svc.Close()
	other, err := sqlitestore.Open(t.Context(), path) // the other replica's store
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	first, err := svc.IngestBackground(t.Context(), knowledge.IngestRequest{Content: longMarkdown("axolotl"), Source: "axolotl.md"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, svc, first.ID, func(d knowledge.Document) bool { return d.Progress.ChunksTotal > 0 }) // held in embedding
	if err := other.DeleteDocument(t.Context(), first.ID); err != nil {
		t.Fatal(err)
	}
	second, err := svc.IngestBackground(t.Context(), knowledge.IngestRequest{Content: longMarkdown("quokka"), Source: "quokka.md"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, svc, second.ID, func(d knowledge.Document) bool { return d.Progress.ChunksTotal > 0 })
}

// heldEmbeddingServer is an embeddings server holding every request until
// release (safe to call more than once; called at the test's end too).
func heldEmbeddingServer(t *testing.T) (*knowledgetest.EmbeddingServer, func()) {
	srv := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 16})
	gate := make(chan struct{})
	srv.Hold(gate)
	release := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	return srv, release
}

// runningAndQueued uploads two documents to svc (one worker, three
// slots, its embeddings held): the first runs, held at its embeddings, the
// second waits in the queue, one slot stays free.
func runningAndQueued(t *testing.T, svc *knowledge.Service) (running, queued knowledge.Document) {
	t.Helper()
	running, err := svc.IngestBackground(t.Context(), knowledge.IngestRequest{Content: longMarkdown("axolotl"), Source: "axolotl.md"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, svc, running.ID, func(d knowledge.Document) bool { return d.Progress.ChunksTotal > 0 })
	queued, err = svc.IngestBackground(t.Context(), knowledge.IngestRequest{Content: longMarkdown("basilisk"), Source: "basilisk.md"})
	if err != nil {
		t.Fatal(err)
	}
	return running, queued
}

// A document waiting in this process's queue longer than stale_after is
// no leftover of a stopped process: the janitor keeps it alive, so it is
// neither claimed again (an attempt counted, a second slot taken) nor, in
// the end, failed for stops that never happened.
func TestAQueuedDocumentIsKeptAliveNotClaimedAgain(t *testing.T) {
	srv, release := heldEmbeddingServer(t)
	const staleAfter = 60 * time.Millisecond
	svc := backgroundService(t, filepath.Join(t.TempDir(), "chatpipe.db"), srv, staleAfter)
	defer svc.Close()
	defer release()
	running, queued := runningAndQueued(t, svc)
	time.Sleep(15 * staleAfter) // long past stale_after, max_attempts (3) times over
	if d, err := svc.Document(t.Context(), knowledge.DefaultTenant, queued.ID); err != nil || d.Status != knowledge.StatusProcessing || d.Attempts != queued.Attempts {
		t.Errorf("the queued document after waiting: %+v, %v; want processing, attempts still %d", d, err, queued.Attempts)
	}
	// The free slot is still free: the queued document did not take it.
	third, err := svc.IngestBackground(t.Context(), knowledge.IngestRequest{Content: longMarkdown("cassowary"), Source: "cassowary.md"})
	if err != nil {
		t.Fatalf("an upload with a slot free: %v", err)
	}
	release()
	for _, id := range []string{running.ID, queued.ID, third.ID} {
		if d := waitFor(t, svc, id, func(d knowledge.Document) bool { return d.Status != knowledge.StatusProcessing }); d.Status != knowledge.StatusReady {
			t.Errorf("document %s ended %s: %s", id, d.Status, d.Error)
		}
	}
}

// quietStore is a store whose heartbeats (progress writes) fail while
// quiet is set: a database under strain.
type quietStore struct {
	knowledge.Store
	quiet atomic.Bool
}

func (s *quietStore) UpdateProgress(ctx context.Context, id string, claim int64, p knowledge.Progress) error {
	if s.quiet.Load() {
		return errors.New("database is locked")
	}
	return s.Store.UpdateProgress(ctx, id, claim, p)
}

// A document of this process whose heartbeat could not be written goes
// stale in the store, but is still this process's: its own claims leave
// it alone (no attempt counted, no second place in the queue).
func TestADocumentWhoseHeartbeatFailedIsNotClaimedByItsOwnServer(t *testing.T) {
	srv, release := heldEmbeddingServer(t)
	defer release()
	inner, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "chatpipe.db"))
	if err != nil {
		t.Fatal(err)
	}
	store := &quietStore{Store: inner}
	const staleAfter = 60 * time.Millisecond
	svc := backgroundServiceOver(t, store, srv, staleAfter)
	defer svc.Close()

	running, queued := runningAndQueued(t, svc)
	store.quiet.Store(true)
	time.Sleep(15 * staleAfter)
	store.quiet.Store(false)
	for _, d := range []knowledge.Document{running, queued} {
		if got, err := svc.Document(t.Context(), knowledge.DefaultTenant, d.ID); err != nil || got.Attempts != d.Attempts {
			t.Errorf("document %s after its heartbeats failed: %+v, %v; want attempts still %d", d.ID, got, err, d.Attempts)
		}
	}
	if _, err := svc.IngestBackground(t.Context(), knowledge.IngestRequest{Content: longMarkdown("cassowary"), Source: "cassowary.md"}); err != nil {
		t.Errorf("an upload with a slot free: %v", err)
	}
	release()
	for _, d := range []knowledge.Document{running, queued} {
		if got := waitFor(t, svc, d.ID, func(d knowledge.Document) bool { return d.Status != knowledge.StatusProcessing }); got.Status != knowledge.StatusReady {
			t.Errorf("document %s ended %s: %s", d.ID, got.Status, got.Error)
		}
	}
}

// raceStore misses a file's stored copy on its first look-up, as a
// replica does when another stores the same file between its look-up and
// its insert.
type raceStore struct {
	knowledge.Store
	missed atomic.Bool
}

func (s *raceStore) DocumentByFileHash(ctx context.Context, tenantID, hash string) (knowledge.Document, error) {
	if s.missed.CompareAndSwap(false, true) {
		return knowledge.Document{}, knowledge.ErrNotFound
	}
	return s.Store.DocumentByFileHash(ctx, tenantID, hash)
}

// The same file stored by another upload between this one's look-up and
// its insert is answered as the duplicate it is (it was a 500).
func TestAFileStoredMeanwhileIsADuplicateNotAnError(t *testing.T) {
	srv := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 16})
	inner, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "chatpipe.db"))
	if err != nil {
		t.Fatal(err)
	}
	store := &raceStore{Store: inner}
	store.missed.Store(true) // the first upload looks up truly
	svc := backgroundServiceOver(t, store, srv, time.Hour)
	defer svc.Close()
	req := knowledge.IngestRequest{Content: longMarkdown("axolotl"), Source: "axolotl.md"}
	first, err := svc.IngestBackground(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	store.missed.Store(false)
	again, err := svc.IngestBackground(t.Context(), req)
	if !errors.Is(err, knowledge.ErrDuplicate) || again.ID != first.ID {
		t.Fatalf("the same file again, its copy missed at first = %+v, %v; want %s with ErrDuplicate", again, err, first.ID)
	}
}

// stuckStore's progress writes for one document wait until their context
// ends, as PostgreSQL's do while that document's row is locked by the
// transaction writing its chunks.
type stuckStore struct {
	knowledge.Store
	stuck atomic.Value // the document id whose writes wait; "" for none
}

func (s *stuckStore) UpdateProgress(ctx context.Context, id string, claim int64, p knowledge.Progress) error {
	if id == s.stuck.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Store.UpdateProgress(ctx, id, claim, p)
}

// A heartbeat that waits (a document being written holds its row) does
// not hold up the others: the documents queued behind it stay alive, and
// another replica does not take them from a live server.
func TestAHeartbeatThatWaitsDoesNotLetTheQueueGoStale(t *testing.T) {
	srv, release := heldEmbeddingServer(t)
	defer release()
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	inner, err := sqlitestore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	store := &stuckStore{Store: inner}
	store.stuck.Store("")
	// A heartbeat waits a third of stale_after at most and comes every
	// third, so the queued document's is at most two thirds old plus the
	// writes' own time: 300 ms leaves 100 ms for those under -race on a
	// loaded machine (90 ms, 30 ms of slack, flaked there).
	const staleAfter = 300 * time.Millisecond
	a := backgroundServiceOver(t, store, srv, staleAfter)
	defer a.Close()
	running, queued := runningAndQueued(t, a)
	store.stuck.Store(running.ID)

	b := backgroundService(t, path, srv, staleAfter) // another replica
	defer b.Close()
	time.Sleep(8 * staleAfter)
	if d, err := b.Document(t.Context(), knowledge.DefaultTenant, queued.ID); err != nil || d.Attempts != queued.Attempts {
		t.Errorf("the queued document behind a waiting heartbeat: %+v, %v; want attempts still %d (not taken by the other replica)", d, err, queued.Attempts)
	}
}

// lostStore is a replica's store cut off from the database for a while:
// its heartbeats fail while quiet is set (as quietStore's) and writing a
// finished document fails; each FailDocument's result is sent on failed.
type lostStore struct {
	quietStore
	failed chan error
}

func (s *lostStore) FinishDocument(context.Context, knowledge.Document, []knowledge.Chunk) (knowledge.Document, error) {
	return knowledge.Document{}, errors.New("connection reset by peer")
}

func (s *lostStore) FailDocument(ctx context.Context, id string, claim int64, reason, duplicateOf string) error {
	err := s.Store.FailDocument(ctx, id, claim, reason, duplicateOf)
	s.failed <- err
	return err
}

// A replica whose heartbeats failed long enough for another to take its
// document over cannot, when its own ingest then fails, fail the
// document the other is ingesting: its writes name the claim it lost.
// The document ends as the other replica makes it: ready.
func TestAReplicaThatLostItsDocumentToAnotherCannotFailIt(t *testing.T) {
	srvA, releaseA := heldEmbeddingServer(t)
	srvB, releaseB := heldEmbeddingServer(t)
	path := filepath.Join(t.TempDir(), "chatpipe.db")
	inner, err := sqlitestore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	storeA := &lostStore{quietStore: quietStore{Store: inner}, failed: make(chan error, 1)}
	// A's own stale_after is long: once its job ends, A must not claim
	// the document back from B (its heartbeats under CI load may lag).
	a := backgroundServiceOver(t, storeA, srvA, time.Hour)
	defer a.Close()
	doc, err := a.IngestBackground(t.Context(), knowledge.IngestRequest{Content: longMarkdown("axolotl"), Source: "axolotl.md"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, doc.ID, func(d knowledge.Document) bool { return d.Progress.ChunksTotal > 0 }) // held at its embeddings
	storeA.quiet.Store(true)

	b := backgroundService(t, path, srvB, 90*time.Millisecond)
	defer b.Close()
	waitFor(t, b, doc.ID, func(d knowledge.Document) bool { return d.Claim == 2 && d.Progress.ChunksTotal > 0 }) // B's now, held

	releaseA() // A's ingest goes on, cannot store the document, and fails it
	select {
	case err := <-storeA.failed:
		if !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("A's FailDocument under the claim it lost: %v, want ErrNotFound", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("A's ingest never failed")
	}
	if d, err := b.Document(t.Context(), knowledge.DefaultTenant, doc.ID); err != nil || d.Status != knowledge.StatusProcessing || d.Claim != 2 {
		t.Fatalf("after A failed: %+v, %v; want still processing under B's claim", d, err)
	}
	releaseB()
	if d := waitFor(t, b, doc.ID, func(d knowledge.Document) bool { return d.Status != knowledge.StatusProcessing }); d.Status != knowledge.StatusReady {
		t.Errorf("the document ended %s (%s); want ready, as B made it", d.Status, d.Error)
	}
}

// flakyStore fails its next documentFails document reads and
// uploadFails upload reads, as a dropped database connection does.
type flakyStore struct {
	knowledge.Store
	documentFails, uploadFails atomic.Int32
}

var errConnectionReset = errors.New("read tcp 127.0.0.1:5432: connection reset by peer")

func (s *flakyStore) Document(ctx context.Context, id string) (knowledge.Document, error) {
	if s.documentFails.Add(-1) >= 0 {
		return knowledge.Document{}, errConnectionReset
	}
	return s.Store.Document(ctx, id)
}

func (s *flakyStore) Upload(ctx context.Context, id string) ([]byte, error) {
	if s.uploadFails.Add(-1) >= 0 {
		return nil, errConnectionReset
	}
	return s.Store.Upload(ctx, id)
}

// A store read that fails in a background ingest is no stop of the
// server: more of them than max_attempts (3) still end ready, not failed
// as "the server stopped 3 times". (Each is retried at the next claim
// pass, a third of stale_after later.)
func TestFailedStoreReadsAreNotCountedAsStops(t *testing.T) {
	srv := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 16})
	inner, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "chatpipe.db"))
	if err != nil {
		t.Fatal(err)
	}
	store := &flakyStore{Store: inner}
	svc := backgroundServiceOver(t, store, srv, 300*time.Millisecond)
	defer svc.Close()
	store.documentFails.Store(2)
	store.uploadFails.Store(2)
	doc, err := svc.IngestBackground(t.Context(), knowledge.IngestRequest{Content: longMarkdown("okapi"), Source: "okapi.md"})
	if err != nil {
		t.Fatal(err)
	}
	// Read past the flaky reads: the job is the one that must meet them.
	read := func(ctx context.Context) (knowledge.Document, error) { return inner.Document(ctx, doc.ID) }
	d := waitRead(t, read, doc.ID, func(d knowledge.Document) bool { return d.Status != knowledge.StatusProcessing })
	if d.Status != knowledge.StatusReady {
		t.Fatalf("document ended %s (%q); want ready: no server stopped, four reads failed", d.Status, d.Error)
	}
	if n := store.documentFails.Load() + store.uploadFails.Load(); n > -2 {
		t.Fatalf("the flaky reads were not all met (%d left)", n)
	}
}

// A document that ClaimStale took but could not read back is returned
// all the same, with its claim, beside the others: it is claimed, and
// left out it would wait out stale_after with an attempt charged.
func TestAClaimedDocumentWhoseReadFailsIsReturned(t *testing.T) {
	inner, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "chatpipe.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	for _, id := range []string{"p1", "p2"} {
		if _, err := inner.BeginDocument(t.Context(), knowledge.Document{ID: id, Title: id}, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	reader := &flakyStore{Store: inner}
	reader.documentFails.Store(1) // p1's read fails, p2's works
	docs, err := knowledge.ClaimedDocuments(t.Context(), reader, []knowledge.Claimed{{ID: "p1", Claim: 2}, {ID: "p2", Claim: 3}})
	if !errors.Is(err, errConnectionReset) {
		t.Errorf("err = %v; want the failed read's", err)
	}
	got := map[string]int64{}
	for _, d := range docs {
		got[d.ID] = d.Claim
	}
	if len(docs) != 2 || got["p1"] != 2 || got["p2"] != 3 {
		t.Fatalf("ClaimedDocuments = %+v; want p1 under claim 2 and p2 under claim 3", docs)
	}
}
