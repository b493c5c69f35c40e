package knowledge_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/cloudwego/eino/components/embedding"
	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/knowledge/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/retrieval"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testConfig is the service's options as config.yaml's knowledge section
// sets them.
func testConfig() knowledge.Options {
	return knowledge.Options{
		MaxUploadBytes: 2 << 20,
		Chunking:       knowledge.Chunker{TargetTokens: 300, OverlapTokens: 40},
		EmbedBatchSize: 32,
		Search:         knowledge.SearchOptions{TopK: 20, KeywordWeight: 1, VectorWeight: 1, RRFK: 60},
	}
}

func openStore(t testing.TB) knowledge.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "chatpipe.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func newService(t testing.TB, emb embedding.Embedder, cfg knowledge.Options) *knowledge.Service {
	t.Helper()
	svc := knowledge.NewService(openStore(t), emb, cfg, nil)
	knowledge.SetRetryBackoff(svc, time.Millisecond)
	t.Cleanup(func() {
		if err := svc.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return svc
}

// embeddedService is a service whose embeddings come from a fake
// /v1/embeddings server through the real client.
func embeddedService(t *testing.T, e knowledgetest.HashEmbedder, tune func(*knowledge.Options, *knowledge.EmbeddingOptions)) (*knowledge.Service, *knowledgetest.EmbeddingServer) {
	t.Helper()
	srv := knowledgetest.NewEmbeddingServer(t, e)
	cfg := testConfig()
	embCfg := knowledge.EmbeddingOptions{Provider: "openai", BaseURL: srv.BaseURL(), Model: "hash-embed", APIKey: "sk-test",
		Timeout: 5 * time.Second}
	if tune != nil {
		tune(&cfg, &embCfg)
	}
	emb, err := knowledge.NewEmbedder(embCfg)
	if err != nil {
		t.Fatal(err)
	}
	return newService(t, emb, cfg), srv
}

func ingest(t *testing.T, svc *knowledge.Service, req knowledge.IngestRequest) knowledge.Document {
	t.Helper()
	doc, err := svc.Ingest(t.Context(), req)
	if err != nil {
		t.Fatalf("Ingest(%q): %v", req.Title, err)
	}
	return doc
}

func search(t *testing.T, svc *knowledge.Service, req retrieval.SearchRequest) retrieval.SearchResponse {
	t.Helper()
	resp, err := svc.Search(t.Context(), req)
	if err != nil {
		t.Fatalf("Search(%q): %v", req.Query, err)
	}
	return resp
}

func titles(hits []retrieval.SearchHit) []string {
	var out []string
	for _, h := range hits {
		if !slices.Contains(out, h.Title) {
			out = append(out, h.Title)
		}
	}
	return out
}

// samples is a small bilingual knowledge base.
var samples = fstest.MapFS{
	"run.md": {Data: []byte("# Running chatpipe\n\nStart the server with `go run .` and open http://localhost:8080 in a browser.\n\n" +
		"## Demo model\n\nThe default configuration uses the offline demo model, so no API key is needed.")},
	"resume.md": {Data: []byte("# Resuming a stream\n\nWhen the network drops, the client reconnects with the Last-Event-ID header " +
		"and the stream continues with no lost and no duplicated token.\n\n## Stopping\n\nPOST stop cancels the generation.")},
	"plugin.md": {Data: []byte("# Writing a plugin\n\nA plugin registers itself by name with pipeline.Register and " +
		"calls next() to continue the chain; returning without next() short-circuits it.")},
	"zh/resume.md": {Data: []byte("# 断线续传\n\n网络断开后，客户端使用 Last-Event-ID 重新连接，流会从断点继续，没有丢失也没有重复的令牌。")},
	"zh/kb.md":     {Data: []byte("# 知识库\n\n知识库把上传的文档切成段落，用关键词检索和向量检索找到相关段落。")},
	"notes.txt":    {Data: []byte("not markdown: ignored by LoadSamples")},
}

func TestIngestThenSearchFindsEnglishAndChineseDocuments(t *testing.T) {
	t.Parallel()
	svc := newService(t, nil, testConfig())
	n, err := svc.LoadSamples(t.Context(), samples)
	if err != nil || n != 5 {
		t.Fatalf("LoadSamples = %d, %v; want 5", n, err)
	}
	for query, want := range map[string]string{
		"How do I resume a stream after the network dropped?": "Resuming a stream",
		"how to write a plugin":                               "Writing a plugin",
		"do I need an API key?":                               "Running chatpipe",
		"断线后如何重新连接？":                                          "断线续传",
		"知识库怎么检索文档":                                           "知识库",
	} {
		resp := search(t, svc, retrieval.SearchRequest{Query: query})
		if resp.Method != knowledge.MethodKeyword || resp.Degraded != "" {
			t.Errorf("Search(%q): method %q, degraded %q; want keyword, not degraded", query, resp.Method, resp.Degraded)
		}
		if got := titles(resp.Hits); len(got) == 0 || got[0] != want {
			t.Errorf("Search(%q) titles = %q, want %q first", query, got, want)
		}
	}
	resp := search(t, svc, retrieval.SearchRequest{Query: "demo model api key"})
	h := resp.Hits[0]
	if h.Title != "Running chatpipe" || h.Heading != "Running chatpipe > Demo model" || h.ChunkIndex != 1 ||
		h.ChunkID == "" || h.DocumentID == "" || !strings.Contains(h.Content, "offline demo model") ||
		h.KeywordRank != 1 || h.KeywordScore <= 0 || h.VectorRank != 0 || h.VectorScore != 0 ||
		math.Abs(h.Score-1.0/61) > 1e-12 {
		t.Errorf("hit = %+v", h)
	}
}

func TestSearchEmptyQueryFindsNothingWithoutCallingTheEmbedder(t *testing.T) {
	t.Parallel()
	svc, srv := embeddedService(t, knowledgetest.HashEmbedder{Dims: 64}, nil)
	ingest(t, svc, knowledge.IngestRequest{Content: "something to find"})
	before := len(srv.Requests())
	for _, q := range []string{"", "   \n\t"} {
		resp, err := svc.Search(t.Context(), retrieval.SearchRequest{Query: q})
		if err != nil || resp.Hits == nil || len(resp.Hits) != 0 || resp.Degraded != "" {
			t.Errorf("Search(%q) = %+v, %v; want an empty, non-nil result", q, resp, err)
		}
	}
	if got := len(srv.Requests()); got != before {
		t.Errorf("empty queries made %d embedding requests", got-before)
	}
}

func TestIngestEmbedsInBatchesThroughTheEmbeddingsEndpoint(t *testing.T) {
	t.Parallel()
	svc, srv := embeddedService(t, knowledgetest.HashEmbedder{Dims: 64}, func(c *knowledge.Options, e *knowledge.EmbeddingOptions) {
		c.Chunking = knowledge.Chunker{TargetTokens: 20, OverlapTokens: 0}
		c.EmbedBatchSize = 2
		e.Dimensions = 64
	})
	var b strings.Builder
	b.WriteString("# Batching\n\n")
	for i := range 5 {
		fmt.Fprintf(&b, "Paragraph %d holds enough words to fill most of one chunk.\n\n", i)
	}
	doc := ingest(t, svc, knowledge.IngestRequest{Content: b.String()})
	if !doc.Embedded || doc.Warning != "" || doc.Chunks != 5 {
		t.Fatalf("doc = %+v; want 5 chunks, embedded, no warning", doc)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d embedding requests, want 3 (batches of 2)", len(reqs))
	}
	r := reqs[0]
	if r.Model != "hash-embed" || r.Dimensions != 64 || r.EncodingFormat != "float" || r.Authorization != "Bearer sk-test" ||
		len(r.Input) != 2 || !strings.HasPrefix(r.Input[0], "Batching\n\nParagraph 0") {
		t.Errorf("first request = %+v", r)
	}
}

func TestHybridSearchFusesVectorAndKeywordRankings(t *testing.T) {
	t.Parallel()
	// To the embedder "automobile" is "car": vector search finds what
	// keyword search cannot.
	emb := knowledgetest.HashEmbedder{Dims: 256, Synonyms: map[string]string{"automobile": "car"}}
	svc, _ := embeddedService(t, emb, nil)
	car := ingest(t, svc, knowledge.IngestRequest{Title: "Car care", Content: "Wash the car. Wax the car."})
	auto := ingest(t, svc, knowledge.IngestRequest{Title: "Engines", Content: "Automobile engines need oil changes every year."})
	ingest(t, svc, knowledge.IngestRequest{Title: "Gardening", Content: "Water the tomatoes in the morning."})

	resp := search(t, svc, retrieval.SearchRequest{Query: "car"})
	if resp.Method != knowledge.MethodHybrid || resp.Degraded != "" {
		t.Fatalf("method %q, degraded %q; want hybrid", resp.Method, resp.Degraded)
	}
	if got := titles(resp.Hits); !slices.Equal(got, []string{"Car care", "Engines"}) {
		t.Fatalf("titles = %q, want [Car care Engines] (the garden is unrelated)", got)
	}
	c, a := resp.Hits[0], resp.Hits[1]
	if c.DocumentID != car.ID || c.KeywordRank != 1 || c.VectorRank != 1 || c.VectorScore <= 0 || c.KeywordScore <= 0 {
		t.Errorf("car hit = %+v; want found by both", c)
	}
	if a.DocumentID != auto.ID || a.KeywordRank != 0 || a.KeywordScore != 0 || a.VectorRank != 2 || a.VectorScore <= 0 {
		t.Errorf("automobile hit = %+v; want found by vector only, second", a)
	}
	if want := 1.0/61 + 1.0/61; math.Abs(c.Score-want) > 1e-12 {
		t.Errorf("fused score %v, want %v", c.Score, want)
	}
	if want := 1.0 / 62; math.Abs(a.Score-want) > 1e-12 {
		t.Errorf("fused score %v, want %v", a.Score, want)
	}

	// Weights and k come from the request when set.
	resp = search(t, svc, retrieval.SearchRequest{Query: "car", KeywordWeight: 0.5, VectorWeight: 2, RRFK: 10, TopK: 1})
	if len(resp.Hits) != 1 || math.Abs(resp.Hits[0].Score-(0.5/11+2.0/11)) > 1e-12 {
		t.Errorf("weighted search = %+v", resp.Hits)
	}
	// A negative weight leaves a ranking out.
	resp = search(t, svc, retrieval.SearchRequest{Query: "automobile", KeywordWeight: -1})
	if resp.Method != knowledge.MethodVector || len(resp.Hits) != 2 || resp.Hits[0].KeywordRank != 0 {
		t.Errorf("vector only: method %q, hits %+v", resp.Method, resp.Hits)
	}
	resp = search(t, svc, retrieval.SearchRequest{Query: "car", VectorWeight: -1})
	if resp.Method != knowledge.MethodKeyword || !slices.Equal(titles(resp.Hits), []string{"Car care"}) {
		t.Errorf("keyword only: method %q, titles %q", resp.Method, titles(resp.Hits))
	}
}

func TestEmbeddingEndpointDownIngestsKeywordOnlyAndSearchDegrades(t *testing.T) {
	t.Parallel()
	svc, srv := embeddedService(t, knowledgetest.HashEmbedder{Dims: 64}, nil)
	up := ingest(t, svc, knowledge.IngestRequest{Title: "Up", Content: "stored while the endpoint was up: zebra"})

	srv.Fail(503, -1)
	down := ingest(t, svc, knowledge.IngestRequest{Title: "Down", Content: "stored while the endpoint was down: zebra"})
	if down.Embedded || !strings.Contains(down.Warning, "keyword search only") || !strings.Contains(down.Warning, "HTTP 503") {
		t.Errorf("ingest while down = %+v; want keyword-only with a warning", down)
	}
	if strings.Contains(down.Warning, "injected") {
		t.Errorf("warning carries the provider's own words: %q", down.Warning)
	}
	if n := len(srv.Requests()); n != 1+3 { // one for Up, three tries for Down
		t.Errorf("%d requests, want 4 (retries of a 503)", n)
	}

	resp := search(t, svc, retrieval.SearchRequest{Query: "zebra"})
	if resp.Method != knowledge.MethodKeyword || !strings.Contains(resp.Degraded, "keyword search only") ||
		!strings.HasPrefix(resp.Degraded, "Embedding the query failed") {
		t.Errorf("search while down: method %q, degraded %q", resp.Method, resp.Degraded)
	}
	if got := titles(resp.Hits); len(got) != 2 {
		t.Errorf("search while down found %q, want both documents by keyword", got)
	}

	srv.Fail(0, 0)
	resp = search(t, svc, retrieval.SearchRequest{Query: "zebra"})
	if resp.Method != knowledge.MethodHybrid || resp.Degraded != "" {
		t.Errorf("search after recovery: method %q, degraded %q", resp.Method, resp.Degraded)
	}
	for _, h := range resp.Hits {
		if h.DocumentID == up.ID && h.VectorRank == 0 {
			t.Errorf("embedded document not found by vector: %+v", h)
		}
		if h.DocumentID == down.ID && h.VectorRank != 0 {
			t.Errorf("keyword-only document found by vector: %+v", h)
		}
	}
}

func TestUnreachableEmbeddingEndpointDegradesWithASentence(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := testConfig()
	cfg.EmbedBatchSize = 8
	emb, err := knowledge.NewEmbedder(knowledge.EmbeddingOptions{Provider: "openai", BaseURL: "http://" + addr + "/v1", Model: "m", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	svc := newService(t, emb, cfg)
	doc := ingest(t, svc, knowledge.IngestRequest{Content: "# Offline\n\nkeyword only content"})
	if doc.Embedded || !strings.Contains(doc.Warning, "unreachable") {
		t.Errorf("doc = %+v; want keyword-only, unreachable", doc)
	}
	resp := search(t, svc, retrieval.SearchRequest{Query: "keyword content"})
	want := "Embedding the query failed (the embedding endpoint at " + addr + " is unreachable); keyword search only."
	if resp.Degraded != want || len(resp.Hits) != 1 {
		t.Errorf("degraded = %q (hits %d), want %q", resp.Degraded, len(resp.Hits), want)
	}
	// Vector search alone has nothing left to search.
	resp = search(t, svc, retrieval.SearchRequest{Query: "keyword content", KeywordWeight: -1})
	want = "Embedding the query failed (the embedding endpoint at " + addr + " is unreachable); nothing was searched."
	if resp.Degraded != want || len(resp.Hits) != 0 {
		t.Errorf("vector alone: degraded = %q (hits %d), want %q", resp.Degraded, len(resp.Hits), want)
	}
}

func TestTransientEmbeddingFailureIsRetried(t *testing.T) {
	t.Parallel()
	svc, srv := embeddedService(t, knowledgetest.HashEmbedder{Dims: 64}, nil)
	srv.Fail(429, 1)
	if doc := ingest(t, svc, knowledge.IngestRequest{Content: "retry me"}); !doc.Embedded || doc.Warning != "" {
		t.Errorf("doc = %+v; want embedded after a retry", doc)
	}
	srv.Fail(400, 1)
	if doc := ingest(t, svc, knowledge.IngestRequest{Content: "a 400 is not retried"}); doc.Embedded {
		t.Errorf("doc = %+v; want keyword-only", doc)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestIngestRejectsBadInputAndStoresNothing(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxUploadBytes = 1000
	svc := newService(t, nil, cfg)
	v, _ := svc.Version(t.Context())
	for _, tc := range []struct {
		name string
		req  knowledge.IngestRequest
		want error
	}{
		{"empty", knowledge.IngestRequest{Content: ""}, knowledge.ErrEmpty},
		{"whitespace", knowledge.IngestRequest{Content: " \n\t\r\n "}, knowledge.ErrEmpty},
		{"bom only", knowledge.IngestRequest{Content: "\uFEFF\n"}, knowledge.ErrEmpty},
		{"empty html", knowledge.IngestRequest{Content: "<script>x()</script>", MediaType: "text/html"}, knowledge.ErrEmpty},
		{"nul", knowledge.IngestRequest{Content: "text\x00more"}, knowledge.ErrBinary},
		{"invalid utf-8", knowledge.IngestRequest{Content: "caf\xe9"}, knowledge.ErrBinary},
		{"control characters", knowledge.IngestRequest{Content: "a\x01b\x02c\x03d"}, knowledge.ErrBinary},
		{"png", knowledge.IngestRequest{Content: "\x89PNG\r\n\x1a\n\x00\x00"}, knowledge.ErrBinary},
		{"too large", knowledge.IngestRequest{Content: strings.Repeat("a", 1001)}, knowledge.ErrTooLarge},
		{"pdf", knowledge.IngestRequest{Content: "text", MediaType: "application/pdf"}, knowledge.ErrUnsupportedType},
		{"bad media type", knowledge.IngestRequest{Content: "text", MediaType: "text/"}, knowledge.ErrUnsupportedType},
	} {
		if _, err := svc.Ingest(t.Context(), tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if docs, total, _ := svc.Documents(t.Context(), knowledge.DefaultTenant, 10, 0); total != 0 {
		t.Errorf("%d documents stored after rejected uploads: %+v", total, docs)
	}
	if v2, _ := svc.Version(t.Context()); v2 != v {
		t.Error("Version changed after rejected uploads")
	}
	// Tabs, form feeds and an escape or two are text.
	ingest(t, svc, knowledge.IngestRequest{Content: "col1\tcol2\f\x1b[1mbold\x1b[0m and a long enough line of text"})
}

func TestIngestDuplicateReturnsTheExistingDocument(t *testing.T) {
	t.Parallel()
	svc := newService(t, nil, testConfig())
	first := ingest(t, svc, knowledge.IngestRequest{Title: "First", Content: "Same text.\r\nSecond line."})
	// The same text after newline normalisation and trimming.
	got, err := svc.Ingest(t.Context(), knowledge.IngestRequest{Title: "Again", Content: "\uFEFF  Same text.\nSecond line.\n\n"})
	if !errors.Is(err, knowledge.ErrDuplicate) || got.ID != first.ID || got.Title != "First" {
		t.Errorf("duplicate Ingest = %+v, %v; want the first document and ErrDuplicate", got, err)
	}
	if _, total, _ := svc.Documents(t.Context(), knowledge.DefaultTenant, 10, 0); total != 1 {
		t.Errorf("%d documents, want 1", total)
	}
}

func TestIngestTitleMediaTypeAndContent(t *testing.T) {
	t.Parallel()
	svc := newService(t, nil, testConfig())
	for _, tc := range []struct {
		req                        knowledge.IngestRequest
		title, mediaType, contains string
	}{
		{knowledge.IngestRequest{Title: "  Given \n title ", Content: "# Heading\n\nbody 1"}, "Given title", knowledge.MediaMarkdown, "# Heading"},
		{knowledge.IngestRequest{Content: "Intro line\n\n## First heading\n\nbody 2"}, "First heading", knowledge.MediaMarkdown, "body 2"},
		{knowledge.IngestRequest{Content: "no heading here\nbody 3", Source: "uploads/My Notes.md"}, "My Notes", knowledge.MediaMarkdown, "body 3"},
		{knowledge.IngestRequest{Content: "# not a heading in text\nbody 4", Source: `C:\docs\notes.txt`}, "notes", knowledge.MediaPlain, "# not a heading"},
		{knowledge.IngestRequest{Content: "first line is the title\nbody 5"}, "first line is the title", knowledge.MediaMarkdown, "body 5"},
		{knowledge.IngestRequest{Content: "<h1>Web page</h1><script>evil()</script><p>body 6</p>", Source: "page.html"}, "Web page", knowledge.MediaHTML, "# Web page\n\nbody 6"},
		{knowledge.IngestRequest{Content: "<p>body 7</p>", MediaType: "text/html; charset=utf-8"}, "body 7", knowledge.MediaHTML, "body 7"},
		{knowledge.IngestRequest{Content: "# Readme\nbody 8", Source: "README.md", MediaType: "application/octet-stream"}, "Readme", knowledge.MediaMarkdown, "body 8"},
		{knowledge.IngestRequest{Content: "plain\nbody 9", MediaType: "text/plain"}, "plain", knowledge.MediaPlain, "body 9"},
	} {
		doc := ingest(t, svc, tc.req)
		if doc.Title != tc.title || doc.MediaType != tc.mediaType || !strings.Contains(doc.Content, tc.contains) {
			t.Errorf("Ingest(%+v) = title %q, type %q, content %q; want %q, %q, containing %q",
				tc.req, doc.Title, doc.MediaType, doc.Content, tc.title, tc.mediaType, tc.contains)
		}
		if strings.Contains(doc.Content, "evil") || strings.Contains(doc.Content, "\r") {
			t.Errorf("content not cleaned: %q", doc.Content)
		}
	}
	long := strings.Repeat("长", 300)
	if doc := ingest(t, svc, knowledge.IngestRequest{Content: long}); len([]rune(doc.Title)) != 200 {
		t.Errorf("derived title has %d characters, want 200", len([]rune(doc.Title)))
	}
}

func TestDocumentsChunksAndDelete(t *testing.T) {
	t.Parallel()
	svc := newService(t, nil, testConfig())
	a := ingest(t, svc, knowledge.IngestRequest{Content: "# A\n\nalpha words"})
	b := ingest(t, svc, knowledge.IngestRequest{Content: "# B\n\nbravo words"})
	docs, total, err := svc.Documents(t.Context(), knowledge.DefaultTenant, 0, 0)
	if err != nil || total != 2 || len(docs) != 2 || docs[0].ID != b.ID {
		t.Errorf("Documents = %+v (total %d), %v; want b, a", docs, total, err)
	}
	got, err := svc.Document(t.Context(), knowledge.DefaultTenant, a.ID)
	if err != nil || got.Content != "# A\n\nalpha words" || got.Chunks != 1 {
		t.Errorf("Document = %+v, %v", got, err)
	}
	chunks, err := svc.Chunks(t.Context(), knowledge.DefaultTenant, a.ID)
	if err != nil || len(chunks) != 1 || chunks[0].Heading != "A" || chunks[0].Content != "alpha words" {
		t.Errorf("Chunks = %+v, %v", chunks, err)
	}

	v, _ := svc.Version(t.Context())
	if err := svc.DeleteDocument(t.Context(), knowledge.DefaultTenant, a.ID); err != nil {
		t.Fatal(err)
	}
	if v2, _ := svc.Version(t.Context()); v2 == v {
		t.Error("Version unchanged by a delete")
	}
	if got := titles(search(t, svc, retrieval.SearchRequest{Query: "alpha words"}).Hits); !slices.Equal(got, []string{"B"}) {
		t.Errorf("after delete, search finds %q", got)
	}
	for _, err := range []error{svc.DeleteDocument(t.Context(), knowledge.DefaultTenant, a.ID), func() error { _, err := svc.Document(t.Context(), knowledge.DefaultTenant, a.ID); return err }()} {
		if !errors.Is(err, knowledge.ErrNotFound) {
			t.Errorf("deleted document: %v, want ErrNotFound", err)
		}
	}
}

func TestLoadSamplesOnlyIntoAnEmptyKnowledgeBase(t *testing.T) {
	t.Parallel()
	svc := newService(t, nil, testConfig())
	fsys := fstest.MapFS{
		"b.md":        {Data: []byte("# B\n\nbravo")},
		"a.markdown":  {Data: []byte("# A\n\nalpha")},
		"dir/c.MD":    {Data: []byte("# C\n\ncharlie")},
		"dir/copy.md": {Data: []byte("# B\n\nbravo")}, // a duplicate is skipped
		"d.txt":       {Data: []byte("delta")},
	}
	n, err := svc.LoadSamples(t.Context(), fsys)
	if err != nil || n != 3 {
		t.Fatalf("LoadSamples = %d, %v; want 3", n, err)
	}
	docs, _, _ := svc.Documents(t.Context(), knowledge.DefaultTenant, 10, 0)
	var got []string
	for _, d := range docs {
		got = append(got, d.Title+":"+d.Source)
	}
	if want := []string{"C:dir/c.MD", "B:b.md", "A:a.markdown"}; !slices.Equal(got, want) {
		t.Errorf("documents = %q, want %q (lexical order, newest first)", got, want)
	}
	if n, err := svc.LoadSamples(t.Context(), fsys); n != 0 || err != nil {
		t.Errorf("second LoadSamples = %d, %v; want 0", n, err)
	}
	bad := fstest.MapFS{"x.md": {Data: []byte("bin\x00ary")}}
	if _, err := newService(t, nil, testConfig()).LoadSamples(t.Context(), bad); !errors.Is(err, knowledge.ErrBinary) {
		t.Errorf("LoadSamples of a binary sample: %v, want ErrBinary", err)
	}
}

func TestLoadSamplesAreSharedWithEveryTenantAndReplaceTheOldDefaultCopies(t *testing.T) {
	t.Parallel()
	svc := newService(t, nil, testConfig())
	fsys := fstest.MapFS{"a.md": {Data: []byte("# A\n\nalpha")}, "b.md": {Data: []byte("# B\n\nbravo")}}
	// A copy an older version loaded into the default tenant goes; a
	// tenant's own upload of the same text stays.
	old := ingest(t, svc, knowledge.IngestRequest{Content: "# A\n\nalpha", Source: "a.md"})
	ingest(t, svc, knowledge.IngestRequest{TenantID: "acme", Content: "# A\n\nalpha", Source: "a.md"})
	if n, err := svc.LoadSamples(t.Context(), fsys); err != nil || n != 2 {
		t.Fatalf("LoadSamples = %d, %v; want 2", n, err)
	}
	if _, err := svc.Document(t.Context(), knowledge.DefaultTenant, old.ID); !errors.Is(err, knowledge.ErrNotFound) {
		t.Errorf("the default tenant's old copy of a sample is still there: %v", err)
	}
	for tenant, want := range map[string]int{knowledge.DefaultTenant: 2, "acme": 3, "globex": 2} {
		docs, total, err := svc.Documents(t.Context(), tenant, 10, 0)
		if err != nil || total != want || len(docs) != want {
			t.Errorf("%s lists %d documents (total %d), %v; want %d", tenant, len(docs), total, err, want)
		}
		if got := search(t, svc, retrieval.SearchRequest{TenantID: tenant, Query: "bravo"}).Hits; len(got) != 1 || got[0].Title != "B" {
			t.Errorf("%s's search for a sample: %+v", tenant, got)
		}
	}
	if n, err := svc.LoadSamples(t.Context(), fsys); err != nil || n != 0 {
		t.Errorf("LoadSamples again = %d, %v; want 0", n, err)
	}
	docs, _, _ := svc.Documents(t.Context(), "globex", 10, 0)
	if err := svc.DeleteDocument(t.Context(), "globex", docs[0].ID); !errors.Is(err, knowledge.ErrForbidden) {
		t.Errorf("a tenant deleting a shared document: %v, want ErrForbidden", err)
	}
	if err := svc.DeleteSharedDocument(t.Context(), docs[0].ID); err != nil {
		t.Errorf("DeleteSharedDocument: %v", err)
	}
}

func TestLoadSamplesStopsEmbeddingAfterAFailure(t *testing.T) {
	t.Parallel()
	svc, srv := embeddedService(t, knowledgetest.HashEmbedder{Dims: 64}, nil)
	srv.Fail(500, -1)
	n, err := svc.LoadSamples(t.Context(), samples)
	if err != nil || n != 5 {
		t.Fatalf("LoadSamples = %d, %v", n, err)
	}
	if got := len(srv.Requests()); got != 3 { // the first sample's tries only
		t.Errorf("%d embedding requests, want 3", got)
	}
}

func TestSearchHonoursTopKAndCancellation(t *testing.T) {
	t.Parallel()
	svc := newService(t, nil, testConfig())
	for i := range 30 {
		ingest(t, svc, knowledge.IngestRequest{Content: fmt.Sprintf("common term document %d", i)})
	}
	if got := len(search(t, svc, retrieval.SearchRequest{Query: "common"}).Hits); got != 20 {
		t.Errorf("default top_k: %d hits, want 20", got)
	}
	if got := len(search(t, svc, retrieval.SearchRequest{Query: "common", TopK: 5}).Hits); got != 5 {
		t.Errorf("top_k 5: %d hits", got)
	}
	if got := len(search(t, svc, retrieval.SearchRequest{Query: "common", TopK: 100000}).Hits); got != 30 {
		t.Errorf("huge top_k: %d hits, want all 30", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := svc.Search(ctx, retrieval.SearchRequest{Query: "common"}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled search: %v, want context.Canceled", err)
	}
}

func TestCanceledIngestStoresNothing(t *testing.T) {
	t.Parallel()
	svc, _ := embeddedService(t, knowledgetest.HashEmbedder{Dims: 8}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := svc.Ingest(ctx, knowledge.IngestRequest{Content: "never stored"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Ingest with a canceled context: %v", err)
	}
	if _, total, _ := svc.Documents(t.Context(), knowledge.DefaultTenant, 10, 0); total != 0 {
		t.Errorf("%d documents stored", total)
	}
}

func TestFuseWeightsRanksAndBreaksTies(t *testing.T) {
	t.Parallel()
	hit := func(id string) knowledge.Hit {
		return knowledge.Hit{ChunkID: id, DocumentID: "d-" + id, Title: "T" + id, Score: 1}
	}
	kw := []knowledge.Hit{hit("a"), hit("b"), hit("c")}
	vec := []knowledge.Hit{hit("c"), hit("d")}
	got := knowledge.Fuse(kw, vec, 1, 1, 60, 10)
	var ids []string
	for _, h := range got {
		ids = append(ids, h.ChunkID)
	}
	// c: 1/63+1/61; a: 1/61; d: 1/62 (vector rank 2); b: 1/62 (keyword rank 2) — tie: ids.
	if want := []string{"c", "a", "b", "d"}; !slices.Equal(ids, want) {
		t.Errorf("fused order = %v, want %v", ids, want)
	}
	if c := got[0]; c.KeywordRank != 3 || c.VectorRank != 1 || c.Title != "Tc" || c.DocumentID != "d-c" {
		t.Errorf("c = %+v", c)
	}
	// A vector weight of 3 puts the vector ranking first.
	got = knowledge.Fuse(kw, vec, 1, 3, 60, 2)
	if len(got) != 2 || got[0].ChunkID != "c" || got[1].ChunkID != "d" {
		t.Errorf("weighted fusion = %+v", got)
	}
	if got := knowledge.Fuse(nil, nil, 1, 1, 60, 5); len(got) != 0 {
		t.Errorf("fusing nothing = %v", got)
	}
}
