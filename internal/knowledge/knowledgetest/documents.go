package knowledgetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

var documentTests = []test{
	{"AddThenGetReturnsTheDocumentWithComputedFields", func(t *testing.T, s knowledge.Store) {
		doc, chunks := newDoc("d1", "Running chatpipe", "Run it with go run.", "Then open the browser.")
		chunks[0].Heading = "Guide > Run"
		chunks[0].Embedding = []float32{1, 0}
		chunks[1].Embedding = []float32{0, 1}
		doc.ContentHash, doc.Bytes, doc.Chunks, doc.Warning = "ignored", 1, 99, "ignored"
		before := time.Now()
		added := add(t, s, doc, chunks)

		want := knowledge.Document{
			ID: "d1", TenantID: knowledge.DefaultTenant, Title: "Running chatpipe", Source: "d1.md", MediaType: knowledge.MediaMarkdown,
			Content: doc.Content, ContentHash: knowledge.ContentHash(doc.Content), Bytes: len(doc.Content),
			Chunks: 2, Embedded: true, Status: knowledge.StatusReady, AddedBy: knowledge.DefaultTenant,
		}
		got, err := s.Document(t.Context(), "d1")
		if err != nil {
			t.Fatalf("Document: %v", err)
		}
		for name, d := range map[string]knowledge.Document{"AddDocument": added, "Document": got} {
			created := d.CreatedAt
			d.CreatedAt = time.Time{}
			if d != want {
				t.Errorf("%s returned\n%+v, want\n%+v", name, d, want)
			}
			if created.Location() != time.UTC || created.Before(before.Add(-timeSlack)) || created.After(time.Now().Add(timeSlack)) {
				t.Errorf("%s: CreatedAt = %v, want UTC near now", name, created)
			}
		}
		if !added.CreatedAt.Equal(got.CreatedAt) {
			t.Errorf("CreatedAt: AddDocument %v, Document %v", added.CreatedAt, got.CreatedAt)
		}
		byHash, err := s.DocumentByHash(t.Context(), knowledge.DefaultTenant, knowledge.ContentHash(doc.Content))
		if err != nil || byHash.ID != "d1" || byHash.Content != doc.Content {
			t.Errorf("DocumentByHash = %+v, %v; want d1 with its content", byHash, err)
		}
	}},

	{"ChunksComeBackInOrderWithoutEmbeddings", func(t *testing.T, s knowledge.Store) {
		doc, chunks := newDoc("d1", "T", "first", "second", "third")
		chunks[1].Heading = "A > B"
		chunks[2].Embedding = []float32{1, 2, 3}
		slices.Reverse(chunks) // the store orders by Index, not by argument order
		add(t, s, doc, chunks)
		got, err := s.Chunks(t.Context(), "d1")
		if err != nil {
			t.Fatalf("Chunks: %v", err)
		}
		slices.Reverse(chunks)
		for i := range chunks {
			chunks[i].DocumentID = "d1"
			chunks[i].Embedding = nil
		}
		if fmt.Sprint(got) != fmt.Sprint(chunks) {
			t.Errorf("Chunks =\n%+v\nwant\n%+v", got, chunks)
		}
		if d, _ := s.Document(t.Context(), "d1"); d.Embedded {
			t.Errorf("Embedded = true with only some chunks embedded")
		}
	}},

	{"DocumentsListNewestFirstWithoutContentAndPage", func(t *testing.T, s knowledge.Store) {
		for i := range 5 {
			addParagraphs(t, s, fmt.Sprintf("d%d", i), fmt.Sprintf("title %d", i), fmt.Sprintf("content %d", i))
		}
		all, total, err := s.Documents(t.Context(), knowledge.DefaultTenant, 10, 0)
		if err != nil {
			t.Fatalf("Documents: %v", err)
		}
		var ids []string
		for _, d := range all {
			ids = append(ids, d.ID)
			if d.Content != "" {
				t.Errorf("listing carries content of %s", d.ID)
			}
			if d.Title == "" || d.ContentHash == "" || d.Chunks != 1 || d.Bytes == 0 || d.CreatedAt.IsZero() {
				t.Errorf("listing entry incomplete: %+v", d)
			}
		}
		if want := []string{"d4", "d3", "d2", "d1", "d0"}; !slices.Equal(ids, want) || total != 5 {
			t.Errorf("Documents = %v (total %d), want %v (total 5)", ids, total, want)
		}
		page, total, err := s.Documents(t.Context(), knowledge.DefaultTenant, 2, 1)
		if err != nil || len(page) != 2 || page[0].ID != "d3" || page[1].ID != "d2" || total != 5 {
			t.Errorf("Documents(2, 1) = %v (total %d), %v; want d3, d2 (total 5)", page, total, err)
		}
		page, _, err = s.Documents(t.Context(), knowledge.DefaultTenant, 2, 10)
		if err != nil || len(page) != 0 {
			t.Errorf("Documents past the end = %v, %v; want none", page, err)
		}
	}},

	{"EmptyStoreListsNothing", func(t *testing.T, s knowledge.Store) {
		docs, total, err := s.Documents(t.Context(), knowledge.DefaultTenant, 10, 0)
		if err != nil || len(docs) != 0 || total != 0 {
			t.Errorf("Documents = %v (total %d), %v; want none", docs, total, err)
		}
	}},

	{"DuplicateContentReturnsTheExistingDocumentAndStoresNothing", func(t *testing.T, s knowledge.Store) {
		first := addParagraphs(t, s, "d1", "First", "same words here")
		v := version(t, s)
		doc, chunks := newDoc("d2", "Second title", "same words here")
		got, err := s.AddDocument(t.Context(), doc, chunks)
		if !errors.Is(err, knowledge.ErrDuplicate) {
			t.Fatalf("AddDocument of the same content: err = %v, want ErrDuplicate", err)
		}
		if got.ID != first.ID || got.Title != "First" {
			t.Errorf("duplicate returned %+v, want the existing document d1", got)
		}
		if _, err := s.Document(t.Context(), "d2"); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("Document(d2) after duplicate: %v, want ErrNotFound", err)
		}
		if version(t, s) != v {
			t.Errorf("Version changed on a rejected duplicate")
		}
		if hits := keyword(t, s, "same", 10); len(hits) != 1 {
			t.Errorf("keyword hits after duplicate = %v, want one", chunkIDs(hits))
		}
	}},

	{"ExistingIDIsRejectedAndNothingIsStored", func(t *testing.T, s knowledge.Store) {
		addParagraphs(t, s, "d1", "First", "alpha")
		doc, chunks := newDoc("d1", "Other", "bravo")
		chunks[0].ID = "fresh-chunk"
		if _, err := s.AddDocument(t.Context(), doc, chunks); !errors.Is(err, knowledge.ErrAlreadyExists) {
			t.Errorf("AddDocument with a taken id: %v, want ErrAlreadyExists", err)
		}
		if hits := keyword(t, s, "bravo", 10); len(hits) != 0 {
			t.Errorf("content of the rejected document is searchable: %v", chunkIDs(hits))
		}
		if d, err := s.Document(t.Context(), "d1"); err != nil || d.Title != "First" {
			t.Errorf("Document(d1) = %+v, %v; want the first", d, err)
		}
	}},

	{"AFailedAddLeavesNoTrace", func(t *testing.T, s knowledge.Store) {
		addParagraphs(t, s, "d1", "First", "alpha")
		v := version(t, s)
		// The second chunk reuses a chunk id of d1: the insert fails midway.
		doc, chunks := newDoc("d2", "Second", "charlie delta", "echo foxtrot")
		chunks[1].ID = chunkID("d1", 0)
		chunks[0].Embedding = []float32{1, 0}
		if _, err := s.AddDocument(t.Context(), doc, chunks); err == nil {
			t.Fatal("AddDocument with a taken chunk id succeeded")
		}
		if _, err := s.Document(t.Context(), "d2"); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("Document(d2) after failed add: %v, want ErrNotFound", err)
		}
		if hits := keyword(t, s, "charlie", 10); len(hits) != 0 {
			t.Errorf("chunk of failed add is searchable: %v", chunkIDs(hits))
		}
		if hits := vector(t, s, []float32{1, 0}, 10); len(hits) != 0 {
			t.Errorf("vector of failed add is searchable: %v", chunkIDs(hits))
		}
		if version(t, s) != v {
			t.Error("Version changed on a failed add")
		}
		// The content is free to be added properly.
		chunks[1].ID = chunkID("d2", 1)
		add(t, s, doc, chunks)
	}},

	{"DeleteRemovesTheDocumentItsChunksAndTheirHits", func(t *testing.T, s knowledge.Store) {
		doc, chunks := newDoc("gone", "Gone", "zebra crossing", "zebra stripes")
		chunks[0].Embedding = []float32{1, 0, 0}
		chunks[1].Embedding = []float32{0.9, 0.1, 0}
		add(t, s, doc, chunks)
		keep, kchunks := newDoc("kept", "Kept", "zebra herd")
		kchunks[0].Embedding = []float32{0.5, 0.5, 0}
		add(t, s, keep, kchunks)
		if got := docIDs(keyword(t, s, "zebra", 10)); len(got) != 2 {
			t.Fatalf("before delete, keyword documents = %v, want both", got)
		}

		if err := s.DeleteDocument(t.Context(), "gone"); err != nil {
			t.Fatalf("DeleteDocument: %v", err)
		}
		if _, err := s.Document(t.Context(), "gone"); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("Document after delete: %v, want ErrNotFound", err)
		}
		if _, err := s.Chunks(t.Context(), "gone"); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("Chunks after delete: %v, want ErrNotFound", err)
		}
		if got := docIDs(keyword(t, s, "zebra stripes crossing", 10)); !slices.Equal(got, []string{"kept"}) {
			t.Errorf("keyword documents after delete = %v, want [kept]", got)
		}
		if got := docIDs(vector(t, s, []float32{1, 0, 0}, 10)); !slices.Equal(got, []string{"kept"}) {
			t.Errorf("vector documents after delete = %v, want [kept]", got)
		}
		if err := s.DeleteDocument(t.Context(), "gone"); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("second DeleteDocument: %v, want ErrNotFound", err)
		}
		// Its content may come back as a new document.
		doc.ID = "back"
		chunks[0].ID, chunks[1].ID = "back-a", "back-b"
		add(t, s, doc, chunks)
	}},

	{"UnknownDocumentIsNotFound", func(t *testing.T, s knowledge.Store) {
		if _, err := s.Document(t.Context(), "nope"); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("Document: %v, want ErrNotFound", err)
		}
		if _, err := s.DocumentByHash(t.Context(), knowledge.DefaultTenant, knowledge.ContentHash("nope")); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("DocumentByHash: %v, want ErrNotFound", err)
		}
		if _, err := s.Chunks(t.Context(), "nope"); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("Chunks: %v, want ErrNotFound", err)
		}
		if err := s.DeleteDocument(t.Context(), "nope"); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("DeleteDocument: %v, want ErrNotFound", err)
		}
	}},

	{"DocumentWithoutChunksIsStored", func(t *testing.T, s knowledge.Store) {
		d := add(t, s, knowledge.Document{ID: "d1", Title: "Empty", Content: "x"}, nil)
		if d.Chunks != 0 || d.Embedded {
			t.Errorf("AddDocument = %+v, want 0 chunks, not embedded", d)
		}
		if chunks, err := s.Chunks(t.Context(), "d1"); err != nil || len(chunks) != 0 {
			t.Errorf("Chunks = %v, %v; want none", chunks, err)
		}
	}},

	{"UnicodeRoundTripsAndIsSearchable", func(t *testing.T, s knowledge.Store) {
		paragraphs := []string{
			"Emoji 🚀 rocket ünïcödé and a zero-width joiner 👩‍💻 coder",
			"עברית مرحبا Ελληνικά кириллица",
			"e\u0301 combining accent; 全角ＡＢＣ; 한국어 문장",
		}
		doc, chunks := newDoc("u1", "Ünïcode 🚀 标题", paragraphs...)
		chunks[2].Heading = "章节 > Sección"
		add(t, s, doc, chunks)
		got, err := s.Document(t.Context(), "u1")
		if err != nil || got.Content != doc.Content || got.Title != doc.Title {
			t.Fatalf("Document = %q / %q, %v; want the content and title as given", got.Title, got.Content, err)
		}
		stored, err := s.Chunks(t.Context(), "u1")
		if err != nil || len(stored) != 3 || stored[2].Content != paragraphs[2] || stored[2].Heading != "章节 > Sección" {
			t.Errorf("Chunks = %+v, %v", stored, err)
		}
		for query, want := range map[string]string{
			"rocket":    chunkID("u1", 0),
			"кириллица": chunkID("u1", 1),
			"مرحبا":     chunkID("u1", 1),
			"한국어":       chunkID("u1", 2),
			"unicode":   chunkID("u1", 0), // diacritics folded
			"Sección":   chunkID("u1", 2), // found by its heading
			"标题":        chunkID("u1", 0), // found by the document title: every chunk matches
			"🚀 unknown": "",
		} {
			hits := keyword(t, s, query, 10)
			if want == "" {
				if len(hits) != 0 {
					t.Errorf("KeywordSearch(%q) = %v, want nothing", query, chunkIDs(hits))
				}
				continue
			}
			if !slices.Contains(chunkIDs(hits), want) {
				t.Errorf("KeywordSearch(%q) = %v, want %s among them", query, chunkIDs(hits), want)
			}
		}
	}},
}
