package knowledgetest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/retrieval"
)

// Two tenants, and one that owns nothing.
const (
	acme    = "acme"
	globex  = "globex"
	initech = "initech"
)

// inTenant is newDoc for a tenant.
func inTenant(tenantID, id, title string, paragraphs ...string) (knowledge.Document, []knowledge.Chunk) {
	doc, chunks := newDoc(id, title, paragraphs...)
	doc.TenantID = tenantID
	return doc, chunks
}

func addIn(t *testing.T, s knowledge.Store, tenantID, id, title string, paragraphs ...string) knowledge.Document {
	t.Helper()
	doc, chunks := inTenant(tenantID, id, title, paragraphs...)
	return add(t, s, doc, chunks)
}

func listIDs(t *testing.T, s knowledge.Store, tenantID string, limit, offset int) (ids []string, total int) {
	t.Helper()
	docs, total, err := s.Documents(t.Context(), tenantID, limit, offset)
	if err != nil {
		t.Fatalf("Documents(%q): %v", tenantID, err)
	}
	for _, d := range docs {
		if d.TenantID != cmp.Or(tenantID, knowledge.DefaultTenant) {
			t.Errorf("Documents(%q) lists %s of tenant %q", tenantID, d.ID, d.TenantID)
		}
		ids = append(ids, d.ID)
	}
	return ids, total
}

var tenantTests = []test{
	{"DocumentsAreListedAndCountedPerTenant", func(t *testing.T, s knowledge.Store) {
		// Interleaved, so that a page of one tenant would differ from a
		// page of all.
		addIn(t, s, acme, "a1", "A1", "acme one")
		addIn(t, s, globex, "g1", "G1", "globex one")
		addIn(t, s, acme, "a2", "A2", "acme two")
		addIn(t, s, "", "d1", "D1", "default one")
		addIn(t, s, globex, "g2", "G2", "globex two")
		addIn(t, s, acme, "a3", "A3", "acme three")

		for _, c := range []struct {
			tenant        string
			limit, offset int
			want          []string
			total         int
		}{
			{acme, 10, 0, []string{"a3", "a2", "a1"}, 3},
			{acme, 1, 1, []string{"a2"}, 3},
			{acme, 10, 3, nil, 3},
			{globex, 10, 0, []string{"g2", "g1"}, 2},
			{knowledge.DefaultTenant, 10, 0, []string{"d1"}, 1},
			{"", 10, 0, []string{"d1"}, 1},
			{initech, 10, 0, nil, 0},
		} {
			ids, total := listIDs(t, s, c.tenant, c.limit, c.offset)
			if !slices.Equal(ids, c.want) || total != c.total {
				t.Errorf("Documents(%q, %d, %d) = %v (total %d), want %v (total %d)",
					c.tenant, c.limit, c.offset, ids, total, c.want, c.total)
			}
		}
		// Reading by id is not scoped (the caller checks), and says whose.
		for id, want := range map[string]string{"a1": acme, "g2": globex, "d1": knowledge.DefaultTenant} {
			if d, err := s.Document(t.Context(), id); err != nil || d.TenantID != want {
				t.Errorf("Document(%s) tenant = %q, %v; want %q", id, d.TenantID, err, want)
			}
		}
	}},

	{"EmptyTenantIDIsTheDefaultTenant", func(t *testing.T, s knowledge.Store) {
		added := addIn(t, s, "", "d1", "Doc", "lonely walrus")
		if added.TenantID != knowledge.DefaultTenant {
			t.Errorf("AddDocument without a tenant: TenantID = %q, want %q", added.TenantID, knowledge.DefaultTenant)
		}
		hash := knowledge.ContentHash("lonely walrus")
		for _, tenant := range []string{"", knowledge.DefaultTenant} {
			if d, err := s.DocumentByHash(t.Context(), tenant, hash); err != nil || d.ID != "d1" {
				t.Errorf("DocumentByHash(%q) = %s, %v; want d1", tenant, d.ID, err)
			}
			if got := chunkIDs(keywordIn(t, s, tenant, "walrus", 10)); !slices.Equal(got, []string{chunkID("d1", 0)}) {
				t.Errorf("KeywordSearch(%q) = %v, want d1's chunk", tenant, got)
			}
		}
		if _, err := s.DocumentByHash(t.Context(), acme, hash); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("DocumentByHash in another tenant: %v, want ErrNotFound", err)
		}
	}},

	{"DuplicatesAreDetectedPerTenant", func(t *testing.T, s knowledge.Store) {
		a := addIn(t, s, acme, "a1", "Acme's", "the very same words")
		g := addIn(t, s, globex, "g1", "Globex's", "the very same words") // no duplicate: another tenant
		if a.ContentHash != g.ContentHash {
			t.Fatalf("content hashes differ: %s, %s", a.ContentHash, g.ContentHash)
		}
		doc, chunks := inTenant(acme, "a2", "Again", "the very same words")
		got, err := s.AddDocument(t.Context(), doc, chunks)
		if !errors.Is(err, knowledge.ErrDuplicate) || got.ID != "a1" {
			t.Errorf("AddDocument of acme's content again = %s, %v; want a1 and ErrDuplicate", got.ID, err)
		}
		for tenant, want := range map[string]string{acme: "a1", globex: "g1"} {
			if d, err := s.DocumentByHash(t.Context(), tenant, a.ContentHash); err != nil || d.ID != want {
				t.Errorf("DocumentByHash(%q) = %s, %v; want %s", tenant, d.ID, err, want)
			}
		}
		if _, err := s.DocumentByHash(t.Context(), initech, a.ContentHash); !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("DocumentByHash(initech): %v, want ErrNotFound", err)
		}
		// Deleting one tenant's copy leaves the other's.
		if err := s.DeleteDocument(t.Context(), "a1"); err != nil {
			t.Fatal(err)
		}
		if d, err := s.DocumentByHash(t.Context(), globex, a.ContentHash); err != nil || d.ID != "g1" {
			t.Errorf("globex's copy after acme's delete = %s, %v", d.ID, err)
		}
		if got := docIDs(keywordIn(t, s, globex, "very same words", 10)); !slices.Equal(got, []string{"g1"}) {
			t.Errorf("globex keyword search after acme's delete = %v, want [g1]", got)
		}
		add(t, s, doc, chunks) // acme may add it again
	}},

	{"DocumentIDsAreUniqueAcrossTenants", func(t *testing.T, s knowledge.Store) {
		addIn(t, s, acme, "d1", "Acme's", "alpha")
		doc, chunks := inTenant(globex, "d1", "Globex's", "bravo")
		chunks[0].ID = "fresh-chunk"
		if _, err := s.AddDocument(t.Context(), doc, chunks); !errors.Is(err, knowledge.ErrAlreadyExists) {
			t.Errorf("AddDocument with an id another tenant has: %v, want ErrAlreadyExists", err)
		}
		if ids, total := listIDs(t, s, globex, 10, 0); len(ids) != 0 || total != 0 {
			t.Errorf("globex lists %v after the rejected add", ids)
		}
	}},

	{"KeywordSearchFindsOnlyTheTenantsChunks", func(t *testing.T, s knowledge.Store) {
		// Globex's chunks match better and outnumber the limit many times:
		// a search that ranked all tenants and then dropped the others
		// would leave acme nothing.
		for i := range 40 {
			addIn(t, s, globex, fmt.Sprintf("g%d", i), "Zebra crossing guide",
				fmt.Sprintf("zebra crossing stripes, zebra crossing rules, number %d", i))
		}
		addIn(t, s, acme, "a1", "Animals", "a zebra lives in the savanna with other animals")

		if got := chunkIDs(keywordIn(t, s, acme, "zebra crossing stripes", 5)); !slices.Equal(got, []string{chunkID("a1", 0)}) {
			t.Errorf("acme's search = %v, want only acme's chunk", got)
		}
		hits := keywordIn(t, s, globex, "zebra crossing stripes animals savanna", 5)
		if len(hits) != 5 || slices.Contains(docIDs(hits), "a1") {
			t.Errorf("globex's search = %v, want 5 of globex's chunks", docIDs(hits))
		}
		for _, tenant := range []string{initech, "", knowledge.DefaultTenant} {
			if got := keywordIn(t, s, tenant, "zebra savanna", 10); len(got) != 0 {
				t.Errorf("search of %q, which owns nothing, = %v", tenant, chunkIDs(got))
			}
		}
	}},

	{"KeywordSearchRanksSeveralTenantsTogether", func(t *testing.T, s knowledge.Store) {
		// Acme's and globex's chunks in one ranking, best first whoever
		// owns them; initech's, the best of all, never; the limit counts
		// both tenants' chunks.
		addIn(t, s, acme, "a1", "A1", "otter river otter river")
		addIn(t, s, acme, "a2", "A2", "a long river through the valley")
		addIn(t, s, globex, "g1", "G1", "otter river in the valley far away")
		addIn(t, s, globex, "g2", "G2", "nothing to see")
		addIn(t, s, initech, "i1", "I1", "otter river otter river otter")
		for i := range 10 {
			addIn(t, s, initech, fmt.Sprintf("i%d", i+2), "Weather", fmt.Sprintf("weather report number %d", i))
		}
		tenants := []string{acme, globex}
		hits, err := s.KeywordSearch(t.Context(), tenants, "otter river", 10)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := docIDs(hits), []string{"a1", "g1", "a2"}; !slices.Equal(got, want) {
			t.Errorf("search of acme and globex = %v, want %v", got, want)
		}
		for i := 1; i < len(hits); i++ {
			if hits[i].Score > hits[i-1].Score {
				t.Errorf("hit %d scores %v, above hit %d's %v", i, hits[i].Score, i-1, hits[i-1].Score)
			}
		}
		if got := docIDs(keywordInAll(t, s, tenants, "otter river", 2)); !slices.Equal(got, []string{"a1", "g1"}) {
			t.Errorf("search of acme and globex, limit 2 = %v, want [a1 g1]", got)
		}
		// A tenant given twice, or "" for the default one, changes nothing.
		if got := docIDs(keywordInAll(t, s, []string{globex, globex, ""}, "otter", 10)); !slices.Equal(got, []string{"g1"}) {
			t.Errorf("search of globex twice and the default tenant = %v, want [g1]", got)
		}
		if got := keywordInAll(t, s, nil, "otter", 10); len(got) != 0 {
			t.Errorf("search of no tenant = %v, want nothing", chunkIDs(got))
		}
	}},

	{"VectorSearchFindsOnlyTheTenantsChunks", func(t *testing.T, s knowledge.Store) {
		for i := range 40 {
			doc, chunks := inTenant(globex, fmt.Sprintf("g%d", i), "G", fmt.Sprintf("globex text %d", i))
			chunks[0].Embedding = []float32{1, 0, float32(i) / 100}
			add(t, s, doc, chunks)
		}
		doc, chunks := inTenant(acme, "a1", "A", "acme text")
		chunks[0].Embedding = []float32{0.1, 1, 0} // barely similar to the query
		add(t, s, doc, chunks)

		query := []float32{1, 0, 0}
		if got := chunkIDs(vectorIn(t, s, acme, query, 5)); !slices.Equal(got, []string{chunkID("a1", 0)}) {
			t.Errorf("acme's vector search = %v, want only acme's chunk", got)
		}
		hits := vectorIn(t, s, globex, []float32{0.1, 1, 0}, 5)
		if len(hits) != 5 || slices.Contains(docIDs(hits), "a1") {
			t.Errorf("globex's vector search = %v, want 5 of globex's chunks", docIDs(hits))
		}
		for _, tenant := range []string{initech, "", knowledge.DefaultTenant} {
			if got := vectorIn(t, s, tenant, query, 10); len(got) != 0 {
				t.Errorf("vector search of %q, which owns nothing, = %v", tenant, chunkIDs(got))
			}
		}
		if err := s.DeleteDocument(t.Context(), "a1"); err != nil {
			t.Fatal(err)
		}
		if got := vectorIn(t, s, acme, query, 5); len(got) != 0 {
			t.Errorf("acme's vector search after its delete = %v", chunkIDs(got))
		}
		if got := vectorIn(t, s, globex, query, 100); len(got) != 40 {
			t.Errorf("globex's vector search after acme's delete: %d hits, want 40", len(got))
		}
	}},

	{"ServiceAnswersAnotherTenantsDocumentAsNotFound", func(t *testing.T, s knowledge.Store) {
		// The Service's tenant checks, over this store; the suite's store
		// is closed by Run, which a second Close through the service would
		// only repeat.
		svc := knowledge.NewService(s, HashEmbedder{Dims: 64}, knowledge.Options{
			Chunking:       knowledge.Chunker{TargetTokens: 300, OverlapTokens: 40},
			EmbedBatchSize: 32,
			Search:         knowledge.SearchOptions{TopK: 20, KeywordWeight: 1, VectorWeight: 1, RRFK: 60},
		}, nil)
		ctx := t.Context()
		ingest := func(tenant, content string) knowledge.Document {
			t.Helper()
			d, err := svc.Ingest(ctx, knowledge.IngestRequest{TenantID: tenant, Content: content})
			if err != nil {
				t.Fatalf("Ingest(%s): %v", tenant, err)
			}
			return d
		}
		a := ingest(acme, "# Acme secrets\n\nThe rocket skates are stored in warehouse seven.")
		g := ingest(globex, "# Globex plans\n\nThe doomsday device runs on hammocks.")
		shared := "# Shared\n\nBoth tenants uploaded this very note."
		as, gs := ingest(acme, shared), ingest(globex, shared)
		if a.TenantID != acme || g.TenantID != globex || as.ID == gs.ID {
			t.Fatalf("ingested %+v, %+v, shared %s and %s", a, g, as.ID, gs.ID)
		}
		if d, err := svc.Ingest(ctx, knowledge.IngestRequest{TenantID: acme, Content: shared}); !errors.Is(err, knowledge.ErrDuplicate) || d.ID != as.ID {
			t.Errorf("acme's duplicate = %s, %v; want acme's copy %s and ErrDuplicate", d.ID, err, as.ID)
		}

		// To globex, acme's document is exactly a missing one.
		_, missing := svc.Document(ctx, globex, "no-such-document")
		same := func(name string, err error) {
			t.Helper()
			if !errors.Is(err, knowledge.ErrNotFound) {
				t.Errorf("%s: %v, want ErrNotFound", name, err)
			} else if strings.ReplaceAll(err.Error(), a.ID, "ID") != strings.ReplaceAll(missing.Error(), "no-such-document", "ID") {
				t.Errorf("%s says %q, a missing document %q", name, err, missing)
			}
		}
		_, err := svc.Document(ctx, globex, a.ID)
		same("Document", err)
		_, err = svc.Chunks(ctx, globex, a.ID)
		same("Chunks", err)
		same("DeleteDocument", svc.DeleteDocument(ctx, globex, a.ID))
		if d, err := svc.Document(ctx, acme, a.ID); err != nil || !strings.Contains(d.Content, "warehouse seven") {
			t.Errorf("acme's document after globex's delete: %v", err)
		}
		if chunks, err := svc.Chunks(ctx, acme, a.ID); err != nil || len(chunks) == 0 {
			t.Errorf("acme's chunks = %d, %v", len(chunks), err)
		}
		for _, tenant := range []string{"", knowledge.DefaultTenant} {
			if _, err := svc.Document(ctx, tenant, a.ID); !errors.Is(err, knowledge.ErrNotFound) {
				t.Errorf("Document as %q: %v, want ErrNotFound", tenant, err)
			}
		}

		docs, total, err := svc.Documents(ctx, globex, 0, 0)
		if err != nil || total != 2 || len(docs) != 2 || docs[0].ID != gs.ID || docs[1].ID != g.ID {
			t.Errorf("globex's documents = %+v (total %d), %v; want its two", docs, total, err)
		}

		for _, method := range []struct {
			name string
			req  retrieval.SearchRequest
		}{
			{"hybrid", retrieval.SearchRequest{}},
			{"keyword", retrieval.SearchRequest{VectorWeight: -1}},
			{"vector", retrieval.SearchRequest{KeywordWeight: -1}},
		} {
			req := method.req
			req.Query = "where are the rocket skates stored? warehouse"
			for tenant, want := range map[string][]string{acme: {a.ID, as.ID}, globex: {g.ID, gs.ID}, "": nil} {
				req.TenantID = tenant
				resp, err := svc.Search(ctx, req)
				if err != nil || resp.Method != method.name {
					t.Fatalf("%s search as %q: method %s, %v", method.name, tenant, resp.Method, err)
				}
				for _, h := range resp.Hits {
					if !slices.Contains(want, h.DocumentID) {
						t.Errorf("%s search as %q found %s (%q)", method.name, tenant, h.DocumentID, h.Title)
					}
				}
				if tenant == acme && (len(resp.Hits) == 0 || resp.Hits[0].DocumentID != a.ID) {
					t.Errorf("%s search as acme does not find its document first: %+v", method.name, resp.Hits)
				}
			}
		}

		if err := svc.DeleteDocument(ctx, acme, a.ID); err != nil {
			t.Errorf("acme deleting its document: %v", err)
		}
		if _, err := svc.Document(ctx, globex, g.ID); err != nil {
			t.Errorf("globex's document after acme's delete: %v", err)
		}
	}},
}
