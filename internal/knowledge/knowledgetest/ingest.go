package knowledgetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// ingestTests: the background-ingest lifecycle (processing → ready or
// failed) and who added a document.
var ingestTests = []test{
	{"AProcessingDocumentIsListedButNeverSearchedNorADuplicate", func(t *testing.T, s knowledge.Store) {
		v0 := version(t, s)
		begun, err := s.BeginDocument(t.Context(), knowledge.Document{ID: "p1", TenantID: "acme", Title: "big.md", Source: "big.md",
			MediaType: knowledge.MediaMarkdown}, []byte("# Big\n\nzebra crossing"))
		if err != nil {
			t.Fatalf("BeginDocument: %v", err)
		}
		if begun.Status != knowledge.StatusProcessing || begun.Attempts != 1 || begun.Claim != 1 || begun.Content != "" {
			t.Errorf("BeginDocument returned %+v; want processing, attempt 1, claim 1, no content", begun)
		}
		if v := version(t, s); v != v0 {
			t.Errorf("version moved from %d to %d on BeginDocument: nothing searchable changed", v0, v)
		}
		docs, total, err := s.Documents(t.Context(), "acme", 10, 0)
		if err != nil || total != 1 || len(docs) != 1 || docs[0].Status != knowledge.StatusProcessing {
			t.Fatalf("Documents = %+v, %d, %v; want the processing document", docs, total, err)
		}
		if up, err := s.Upload(t.Context(), "p1"); err != nil || string(up) != "# Big\n\nzebra crossing" {
			t.Errorf("Upload = %q, %v", up, err)
		}
		p := knowledge.Progress{PagesDone: 2, PagesTotal: 5, ChunksTotal: 3, ChunksEmbedded: 1}
		if err := s.UpdateProgress(t.Context(), "p1", 1, p); err != nil {
			t.Fatalf("UpdateProgress: %v", err)
		}
		if d, err := s.Document(t.Context(), "p1"); err != nil || d.Progress != p || d.Status != knowledge.StatusProcessing || d.AddedBy != "acme" {
			t.Errorf("Document = %+v, %v; want progress %+v", d, err, p)
		}
		if hits := keywordIn(t, s, "acme", "zebra", 10); len(hits) != 0 {
			t.Errorf("a processing document was searched: %+v", hits)
		}
		// The same content added meanwhile is no duplicate of it.
		doc, chunks := newDoc("r1", "Ready", "zebra crossing")
		doc.TenantID = "acme"
		add(t, s, doc, chunks)
	}},

	{"FinishDocumentMakesItReadyAndSearchableAtOnce", func(t *testing.T, s knowledge.Store) {
		if _, err := s.BeginDocument(t.Context(), knowledge.Document{ID: "p1", Title: "upload.md", Source: "upload.md"}, []byte("x")); err != nil {
			t.Fatalf("BeginDocument: %v", err)
		}
		v0 := version(t, s)
		doc, chunks := newDoc("p1", "Giraffes", "giraffe necks are long", "okapi relatives")
		doc.Claim = 1 // BeginDocument's
		chunks[0].Embedding = []float32{1, 0}
		chunks[1].Embedding = []float32{0, 1}
		got, err := s.FinishDocument(t.Context(), doc, chunks)
		if err != nil {
			t.Fatalf("FinishDocument: %v", err)
		}
		if got.Status != knowledge.StatusReady || got.Title != "Giraffes" || got.Chunks != 2 || !got.Embedded || got.Attempts != 0 || got.Claim != 0 ||
			got.ContentHash != knowledge.ContentHash(doc.Content) || got.Source != "upload.md" {
			t.Errorf("FinishDocument returned %+v", got)
		}
		if v := version(t, s); v == v0 {
			t.Error("version did not move when the document became searchable")
		}
		if ids := docIDs(keyword(t, s, "giraffe", 10)); !slices.Equal(ids, []string{"p1"}) {
			t.Errorf("keyword search found %v, want [p1]", ids)
		}
		if ids := docIDs(vector(t, s, []float32{0, 1}, 10)); !slices.Equal(ids, []string{"p1"}) {
			t.Errorf("vector search found %v, want [p1]", ids)
		}
		d, err := s.Document(t.Context(), "p1")
		if err != nil || d.Status != knowledge.StatusReady || d.Content != doc.Content || d.Progress != (knowledge.Progress{}) {
			t.Errorf("Document = %+v, %v", d, err)
		}
		if _, err := s.Upload(t.Context(), "p1"); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("Upload of a ready document: %v, want ErrNotFound (the upload is dropped)", err)
		}
		if _, err := s.FinishDocument(t.Context(), doc, chunks); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("FinishDocument twice: %v, want ErrNotFound", err)
		}
		if err := s.UpdateProgress(t.Context(), "p1", 1, knowledge.Progress{}); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("UpdateProgress of a ready document: %v, want ErrNotFound", err)
		}
	}},

	{"FinishDocumentRefusesADuplicateAndStoresNothing", func(t *testing.T, s knowledge.Store) {
		addParagraphs(t, s, "r1", "Original", "same words")
		if _, err := s.BeginDocument(t.Context(), knowledge.Document{ID: "p1", Title: "copy"}, []byte("same words")); err != nil {
			t.Fatalf("BeginDocument: %v", err)
		}
		doc, chunks := newDoc("p1", "Copy", "same words")
		doc.Claim = 1
		existing, err := s.FinishDocument(t.Context(), doc, chunks)
		if !errors.Is(err, knowledge.ErrDuplicate) || existing.ID != "r1" {
			t.Fatalf("FinishDocument = %+v, %v; want r1 and ErrDuplicate", existing, err)
		}
		if d, err := s.Document(t.Context(), "p1"); err != nil || d.Status != knowledge.StatusProcessing {
			t.Errorf("after a refused finish: %+v, %v; want still processing", d, err)
		}
		if hits := keyword(t, s, "same", 10); len(hits) != 1 {
			t.Errorf("keyword search found %d chunks, want 1 (the original's)", len(hits))
		}
	}},

	{"FailDocumentKeepsTheReasonAndDropsTheUpload", func(t *testing.T, s knowledge.Store) {
		if _, err := s.BeginDocument(t.Context(), knowledge.Document{ID: "p1", Title: "scan.pdf"}, []byte("%PDF")); err != nil {
			t.Fatalf("BeginDocument: %v", err)
		}
		if err := s.FailDocument(t.Context(), "p1", 1, "no extractable text (scanned PDF?)", ""); err != nil {
			t.Fatalf("FailDocument: %v", err)
		}
		d, err := s.Document(t.Context(), "p1")
		if err != nil || d.Status != knowledge.StatusFailed || d.Error != "no extractable text (scanned PDF?)" {
			t.Errorf("Document = %+v, %v; want failed with the reason", d, err)
		}
		if _, err := s.Upload(t.Context(), "p1"); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("Upload of a failed document: %v, want ErrNotFound", err)
		}
		if err := s.FailDocument(t.Context(), "p1", 1, "again", ""); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("FailDocument twice: %v, want ErrNotFound", err)
		}
		if err := s.DeleteDocument(t.Context(), "p1"); err != nil {
			t.Errorf("DeleteDocument of a failed document: %v", err)
		}
		if _, err := s.Document(t.Context(), "p1"); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("Document after delete: %v", err)
		}
	}},

	{"DeleteFailedRemovesOnlyTheUploadersFailedAttemptsOfTheFileOrTitle", func(t *testing.T, s knowledge.Store) {
		failedAs := func(d knowledge.Document, duplicateOf string) {
			t.Helper()
			if _, err := s.BeginDocument(t.Context(), d, []byte(d.ID)); err != nil {
				t.Fatalf("BeginDocument %s: %v", d.ID, err)
			}
			if err := s.FailDocument(t.Context(), d.ID, 1, "broken", duplicateOf); err != nil {
				t.Fatalf("FailDocument %s: %v", d.ID, err)
			}
		}
		failed := func(id, tenant, title, source string) {
			t.Helper()
			failedAs(knowledge.Document{ID: id, TenantID: tenant, Title: title, Source: source}, "")
		}
		failed("f1", "acme", "scan", "scan.pdf")
		failed("f2", "acme", "Scan of the lease", "scan.pdf") // another title, the same file name
		failed("f3", "beta", "scan", "scan.pdf")              // another tenant
		failed("f4", "acme", "scan", "other.pdf")             // another file
		failed("t1", "acme", "Notes", "")                     // texts: by title
		failed("t2", "acme", "Notes", "")
		failed("t3", "acme", "Other notes", "")
		failed("u1", "acme", "", "") // untitled texts are never taken for one another
		failed("u2", "acme", "", "")
		// Shared documents: one uploader's attempts are not another's, nor
		// the shared tenant's own (as the samples are).
		failedAs(knowledge.Document{ID: "s0", TenantID: knowledge.SharedTenant, Title: "handbook", Source: "handbook.pdf"}, "")
		failedAs(knowledge.Document{ID: "s1", TenantID: knowledge.SharedTenant, AddedBy: "acme", Title: "handbook", Source: "handbook.pdf"}, "")
		failedAs(knowledge.Document{ID: "s2", TenantID: knowledge.SharedTenant, AddedBy: "beta", Title: "handbook", Source: "handbook.pdf"}, "")
		// One that failed as a duplicate answers a copy sent again: it stays.
		ready, chunks := newDoc("r1", "Notes", "kept")
		ready.TenantID, ready.Source = "acme", "scan.pdf"
		add(t, s, ready, chunks)
		failedAs(knowledge.Document{ID: "d1", TenantID: "acme", Title: "scan", Source: "scan.pdf"}, "r1")
		if _, err := s.BeginDocument(t.Context(), knowledge.Document{ID: "p1", TenantID: "acme", Title: "scan", Source: "scan.pdf"}, []byte("p1")); err != nil {
			t.Fatal(err)
		}

		for _, c := range []struct {
			doc  knowledge.Document
			want int
			what string
		}{
			{knowledge.Document{ID: "p1", TenantID: "acme", AddedBy: "acme", Title: "scan", Source: "scan.pdf"}, 2, "scan.pdf: f1 and f2"},
			{knowledge.Document{ID: "t2", TenantID: "acme", Title: "Notes"}, 1, "Notes, t2 kept: t1"},
			{knowledge.Document{ID: "u2", TenantID: "acme"}, 0, "no title and no file"},
			{knowledge.Document{ID: "new", TenantID: knowledge.SharedTenant, AddedBy: "acme", Title: "handbook", Source: "handbook.pdf"}, 1, "acme's shared handbook: s1"},
			{knowledge.Document{ID: "p1", TenantID: "acme", Title: "scan", Source: "scan.pdf"}, 0, "again"},
		} {
			if n, err := s.DeleteFailed(t.Context(), c.doc); err != nil || n != c.want {
				t.Errorf("DeleteFailed(%s) = %d, %v; want %d", c.what, n, err, c.want)
			}
		}
		for id, want := range map[string]bool{"f1": false, "f2": false, "t1": false, "s1": false, "s0": true,
			"f3": true, "f4": true, "t2": true, "t3": true, "u1": true, "u2": true, "s2": true, "d1": true, "p1": true, "r1": true} {
			_, err := s.Document(t.Context(), id)
			if got := err == nil; got != want {
				t.Errorf("after DeleteFailed, document %s exists = %v (%v), want %v", id, got, err, want)
			}
		}
	}},

	{"ClaimStaleTakesQuietIngestsOnceUntilTheyGoQuietAgain", func(t *testing.T, s knowledge.Store) {
		for _, id := range []string{"p1", "p2", "p3"} {
			if _, err := s.BeginDocument(t.Context(), knowledge.Document{ID: id, Title: id}, []byte(id)); err != nil {
				t.Fatalf("BeginDocument: %v", err)
			}
		}
		if err := s.FailDocument(t.Context(), "p3", 1, "broken", ""); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ClaimStale(t.Context(), time.Now().Add(-time.Hour), 10, nil); err != nil || len(got) != 0 {
			t.Fatalf("ClaimStale of fresh ingests = %+v, %v; want none", got, err)
		}
		if err := s.UpdateProgress(t.Context(), "p2", 1, knowledge.Progress{ChunksTotal: 9}); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseDocument(t.Context(), "p2", 1); err != nil {
			t.Fatalf("ReleaseDocument: %v", err)
		}
		got, err := s.ClaimStale(t.Context(), time.Now().Add(-time.Hour), 10, nil)
		if err != nil || len(got) != 1 || got[0].ID != "p2" || got[0].Attempts != 1 || got[0].Status != knowledge.StatusProcessing ||
			got[0].Progress != (knowledge.Progress{}) {
			t.Fatalf("ClaimStale after releasing p2 = %+v, %v; want p2 at attempt 1 (a release gives its attempt back), its progress zeroed", got, err)
		}
		if again, err := s.ClaimStale(t.Context(), time.Now().Add(-time.Hour), 10, nil); err != nil || len(again) != 0 {
			t.Errorf("ClaimStale again = %+v, %v; a claim is alive until it goes quiet", again, err)
		}
		// The caller's own documents are never claimed.
		if got, err := s.ClaimStale(t.Context(), time.Now().Add(time.Hour), 10, []string{"p1", "p2"}); err != nil || len(got) != 0 {
			t.Errorf("ClaimStale except p1 and p2 = %+v, %v; want none", got, err)
		}
		// Everything processing is stale by a cut-off in the future; the
		// failed one never is, and the limit holds.
		got, err = s.ClaimStale(t.Context(), time.Now().Add(time.Hour), 1, nil)
		if err != nil || len(got) != 1 {
			t.Fatalf("ClaimStale(limit 1) = %+v, %v", got, err)
		}
		got, err = s.ClaimStale(t.Context(), time.Now().Add(time.Hour), 10, nil)
		ids := make([]string, len(got))
		for i, d := range got {
			ids[i] = d.ID
		}
		slices.Sort(ids)
		if err != nil || !slices.Equal(ids, []string{"p1", "p2"}) {
			t.Errorf("ClaimStale(in an hour) = %v, %v; want p1 and p2 (p3 failed)", ids, err)
		}
		// A claim that went quiet without a release (its process died)
		// counts: p2 is at its second attempt now.
		if d, err := s.Document(t.Context(), "p2"); err != nil || d.Attempts != 2 {
			t.Errorf("p2 after a claim that was never released: %+v, %v; want attempt 2", d, err)
		}
		// Only the documents in except are left alone.
		if got, err := s.ClaimStale(t.Context(), time.Now().Add(time.Hour), 10, []string{"p1"}); err != nil || len(got) != 1 || got[0].ID != "p2" {
			t.Errorf("ClaimStale except p1 = %+v, %v; want p2", got, err)
		}
	}},

	{"AClaimTakenOverFencesItsFormerHolderOut", func(t *testing.T, s knowledge.Store) {
		// p1 begun here (claim 1); its heartbeats stop, and another
		// process claims it (claim 2).
		if _, err := s.BeginDocument(t.Context(), knowledge.Document{ID: "p1", Title: "p1"}, []byte("p1")); err != nil {
			t.Fatalf("BeginDocument: %v", err)
		}
		got, err := s.ClaimStale(t.Context(), time.Now().Add(time.Hour), 10, nil)
		if err != nil || len(got) != 1 || got[0].Claim != 2 {
			t.Fatalf("ClaimStale = %+v, %v; want p1 under claim 2", got, err)
		}
		progress := knowledge.Progress{PagesDone: 3, PagesTotal: 8}
		if err := s.UpdateProgress(t.Context(), "p1", 2, progress); err != nil {
			t.Fatalf("UpdateProgress by the new holder: %v", err)
		}
		// The former holder can no longer write anything of p1's.
		if err := s.UpdateProgress(t.Context(), "p1", 1, knowledge.Progress{PagesDone: 7}); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("UpdateProgress under the lost claim: %v, want ErrNotFound", err)
		}
		if err := s.ReleaseDocument(t.Context(), "p1", 1); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("ReleaseDocument under the lost claim: %v, want ErrNotFound", err)
		}
		if err := s.FailDocument(t.Context(), "p1", 1, "Storing the document failed.", ""); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("FailDocument under the lost claim: %v, want ErrNotFound", err)
		}
		stale, chunks := newDoc("p1", "Stale", "written by the former holder")
		stale.Claim = 1
		if _, err := s.FinishDocument(t.Context(), stale, chunks); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("FinishDocument under the lost claim: %v, want ErrNotFound", err)
		}
		d, err := s.Document(t.Context(), "p1")
		if err != nil || d.Status != knowledge.StatusProcessing || d.Progress != progress || d.Attempts != 2 || d.Claim != 2 {
			t.Fatalf("p1 after its former holder's writes = %+v, %v; want processing, the new holder's progress, attempt 2, claim 2", d, err)
		}
		if again, err := s.ClaimStale(t.Context(), time.Now().Add(-time.Hour), 10, nil); err != nil || len(again) != 0 {
			t.Errorf("ClaimStale after the former holder's release = %+v, %v; want none (the release changed nothing)", again, err)
		}
		// A release gives back the attempt but never the claim: the next
		// claim is a new one, and the released one stays out.
		if err := s.ReleaseDocument(t.Context(), "p1", 2); err != nil {
			t.Fatalf("ReleaseDocument by the holder: %v", err)
		}
		got, err = s.ClaimStale(t.Context(), time.Now().Add(-time.Hour), 10, nil)
		if err != nil || len(got) != 1 || got[0].Claim != 3 || got[0].Attempts != 2 {
			t.Fatalf("ClaimStale after a release = %+v, %v; want p1 under claim 3, at attempt 2", got, err)
		}
		if err := s.UpdateProgress(t.Context(), "p1", 2, knowledge.Progress{}); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("UpdateProgress under a released claim: %v, want ErrNotFound", err)
		}
		doc, chunks := newDoc("p1", "Fresh", "written by the holder")
		doc.Claim = 3
		if got, err := s.FinishDocument(t.Context(), doc, chunks); err != nil || got.Status != knowledge.StatusReady {
			t.Fatalf("FinishDocument by the holder = %+v, %v", got, err)
		}
		if ids := docIDs(keyword(t, s, "holder", 10)); !slices.Equal(ids, []string{"p1"}) {
			t.Errorf("keyword search found %v, want [p1]", ids)
		}
	}},

	{"AddedByIsTheUploaderOfASharedDocument", func(t *testing.T, s knowledge.Store) {
		doc, chunks := newDoc("s1", "Shared", "for everyone")
		doc.TenantID, doc.AddedBy = knowledge.SharedTenant, "acme"
		add(t, s, doc, chunks)
		d, err := s.Document(t.Context(), "s1")
		if err != nil || d.TenantID != knowledge.SharedTenant || d.AddedBy != "acme" {
			t.Errorf("Document = %+v, %v; want tenant %s added by acme", d, err, knowledge.SharedTenant)
		}
		addParagraphs(t, s, "own", "Own", "mine")
		if d, err := s.Document(t.Context(), "own"); err != nil || d.AddedBy != knowledge.DefaultTenant {
			t.Errorf("AddedBy of an own document = %q, %v; want its tenant", d.AddedBy, err)
		}
	}},

	{"AFileHashFindsItsProcessingAndReadyDocumentNotAFailedOneNorAnotherTenants", func(t *testing.T, s knowledge.Store) {
		file := []byte("%PDF-1.7 the same file twice")
		h := knowledge.FileHash(file)
		if _, err := s.BeginDocument(t.Context(), knowledge.Document{ID: "p1", TenantID: "acme", Source: "a.pdf", FileHash: h}, file); err != nil {
			t.Fatalf("BeginDocument: %v", err)
		}
		text, chunks := newDoc("t1", "Text", "added at once")
		text.TenantID = "acme"
		add(t, s, text, chunks) // no file hash
		if d, err := s.DocumentByFileHash(t.Context(), "acme", h); err != nil || d.ID != "p1" || d.Status != knowledge.StatusProcessing {
			t.Errorf("DocumentByFileHash while processing = %+v, %v; want p1", d, err)
		}
		// One document per tenant and file: a second begun at once is refused.
		if _, err := s.BeginDocument(t.Context(), knowledge.Document{ID: "p1b", TenantID: "acme", FileHash: h}, file); !errors.Is(err, knowledge.ErrAlreadyExists) {
			t.Errorf("a second BeginDocument of the same file: %v; want ErrAlreadyExists", err)
		}
		if _, err := s.BeginDocument(t.Context(), knowledge.Document{ID: "p1c", TenantID: "gamma", FileHash: h}, file); err != nil {
			t.Errorf("the same file in another tenant: %v", err)
		}
		for _, c := range []struct{ tenant, hash string }{{"beta", h}, {"acme", ""}, {"acme", knowledge.FileHash([]byte("other"))}} {
			if d, err := s.DocumentByFileHash(t.Context(), c.tenant, c.hash); !errors.Is(err, knowledge.ErrNotFound) {
				t.Errorf("DocumentByFileHash(%q, %q) = %+v, %v; want ErrNotFound", c.tenant, c.hash, d, err)
			}
		}
		doc, chunks := newDoc("p1", "Manual", "gyroscope calibration")
		doc.Claim = 1
		if _, err := s.FinishDocument(t.Context(), doc, chunks); err != nil {
			t.Fatalf("FinishDocument: %v", err)
		}
		if d, err := s.DocumentByFileHash(t.Context(), "acme", h); err != nil || d.ID != "p1" || d.Status != knowledge.StatusReady {
			t.Errorf("DocumentByFileHash once ready = %+v, %v; want p1 ready", d, err)
		}
		// A failed ingest of a file is no duplicate of it: it may be sent again.
		other := []byte("%PDF-1.7 a file that fails")
		if _, err := s.BeginDocument(t.Context(), knowledge.Document{ID: "p2", TenantID: "acme", FileHash: knowledge.FileHash(other)}, other); err != nil {
			t.Fatalf("BeginDocument: %v", err)
		}
		if err := s.FailDocument(t.Context(), "p2", 1, "no text", ""); err != nil {
			t.Fatalf("FailDocument: %v", err)
		}
		if d, err := s.DocumentByFileHash(t.Context(), "acme", knowledge.FileHash(other)); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("DocumentByFileHash of a failed ingest = %+v, %v; want ErrNotFound", d, err)
		}
		// One that failed as a duplicate keeps its file known.
		resaved := []byte("%PDF-1.7 a re-saved copy")
		if _, err := s.BeginDocument(t.Context(), knowledge.Document{ID: "p4", TenantID: "acme", FileHash: knowledge.FileHash(resaved)}, resaved); err != nil {
			t.Fatalf("BeginDocument: %v", err)
		}
		if err := s.FailDocument(t.Context(), "p4", 1, "the same text is stored", "p1"); err != nil {
			t.Fatalf("FailDocument: %v", err)
		}
		if d, err := s.DocumentByFileHash(t.Context(), "acme", knowledge.FileHash(resaved)); err != nil || d.ID != "p4" ||
			d.Status != knowledge.StatusFailed || d.DuplicateOf != "p1" {
			t.Errorf("DocumentByFileHash of a failed duplicate = %+v, %v; want p4, failed, a duplicate of p1", d, err)
		}
		if _, err := s.BeginDocument(t.Context(), knowledge.Document{ID: "p3", TenantID: "acme", FileHash: knowledge.FileHash(other)}, other); err != nil {
			t.Errorf("the failed file sent again: %v", err)
		}
		// A document added at once from a file is found by it too.
		small := []byte("%PDF-1.7 a small file")
		sdoc, schunks := newDoc("s1", "Small", "added from a small file")
		sdoc.TenantID, sdoc.FileHash = "acme", knowledge.FileHash(small)
		add(t, s, sdoc, schunks)
		if d, err := s.DocumentByFileHash(t.Context(), "acme", knowledge.FileHash(small)); err != nil || d.ID != "s1" {
			t.Errorf("DocumentByFileHash of an added file = %+v, %v; want s1", d, err)
		}
		if err := s.DeleteDocument(t.Context(), "p1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DocumentByFileHash(t.Context(), "acme", h); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("DocumentByFileHash after delete: %v; want ErrNotFound", err)
		}
	}},
}
