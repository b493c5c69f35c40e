package knowledgetest

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// corpus is a small bilingual knowledge base.
func corpus(t *testing.T, s knowledge.Store) {
	t.Helper()
	addParagraphs(t, s, "run", "Running chatpipe",
		"Start the server with go run and open the web page in a browser.",
		"The default configuration uses the offline demo model.")
	addParagraphs(t, s, "resume", "Resuming a stream",
		"After a dropped network connection the client reconnects with Last-Event-ID and the stream resumes without gaps.",
		"Stop cancels generation for real.")
	addParagraphs(t, s, "plugin", "Writing a plugin",
		"A plugin registers itself by name and handles pipeline events; call next to continue the chain.")
	addParagraphs(t, s, "zh-resume", "恢复流",
		"客户端断线后使用 Last-Event-ID 重新连接，流会从断点继续，没有丢失也没有重复的令牌。",
		"停止按钮会真正取消生成。")
	addParagraphs(t, s, "zh-kb", "知识库",
		"知识库把文档切成段落，并用关键词和向量检索。")
}

var keywordTests = []test{
	{"FullWidthLettersAndDigitsMatchTheirASCII", func(t *testing.T, s knowledge.Store) {
		addParagraphs(t, s, "export", "导出", "支持ＰＤＦ文件导出，版本Ｖ２。")
		addParagraphs(t, s, "zebra", "Zebrafish", "Zebrafish regrow their fins.")
		for query, want := range map[string]string{"PDF": "export", "v2": "export", "ｚｅｂｒａｆｉｓｈ": "zebra", "ＦＩＮＳ": "zebra"} {
			if got := docIDs(keyword(t, s, query, 5)); len(got) == 0 || got[0] != want {
				t.Errorf("keyword(%q) = %v, want %s first", query, got, want)
			}
		}
	}},
	{"EnglishQueryFindsItsDocumentFirst", func(t *testing.T, s knowledge.Store) {
		corpus(t, s)
		for query, want := range map[string]string{
			"How do I resume a stream after the network dropped?": "resume",
			"write a plugin":                   "plugin",
			"START THE SERVER":                 "run",
			"which model does the default use": "run",
			"reconnects Last-Event-ID":         "resume",
			"registers itself by name, next()": "plugin",
			"cancels generation":               "resume",
		} {
			hits := keyword(t, s, query, 10)
			if len(hits) == 0 || hits[0].DocumentID != want {
				t.Errorf("KeywordSearch(%q) documents = %v, want %s first", query, docIDs(hits), want)
			}
		}
	}},

	{"ChineseQueryFindsItsDocumentFirst", func(t *testing.T, s knowledge.Store) {
		corpus(t, s)
		for query, want := range map[string]string{
			"如何在断线后恢复流？": "zh-resume",
			"重新连接":       "zh-resume",
			"知识库":        "zh-kb",
			"关键词检索":      "zh-kb",
			"怎么取消生成":     "zh-resume",
		} {
			hits := keyword(t, s, query, 10)
			if len(hits) == 0 || hits[0].DocumentID != want {
				t.Errorf("KeywordSearch(%q) documents = %v, want %s first", query, docIDs(hits), want)
			}
		}
	}},

	{"ALeadWordFindsEveryChunkOfItsDocument", func(t *testing.T, s knowledge.Store) {
		// The document's lead (knowledge.Lead) is indexed with each of its
		// chunks, weighing more than a chunk's own text.
		addParagraphs(t, s, "zebra", "Notes", "zebra - a striped animal of the savanna",
			"grazing habits and herd size", "predators and lifespan")
		addParagraphs(t, s, "cattle", "Farming", "cattle on farms", "the herd size of a dairy farm and its grazing")
		if hits := keyword(t, s, "striped", 10); len(hits) != 3 || docIDs(hits)[0] != "zebra" {
			t.Errorf("KeywordSearch(striped) = %v, want the three chunks of zebra", chunkIDs(hits))
		}
		hits := keyword(t, s, "zebra herd", 10)
		if len(hits) < 2 || hits[0].ChunkID != chunkID("zebra", 1) {
			t.Errorf("KeywordSearch(zebra herd) = %v, want %s first (its lead says zebra)", chunkIDs(hits), chunkID("zebra", 1))
		}
	}},

	{"HitsCarryTheirChunkAndDocument", func(t *testing.T, s knowledge.Store) {
		doc, chunks := newDoc("d1", "Guide", "intro text", "the install steps")
		chunks[1].Heading = "Guide > Install"
		add(t, s, doc, chunks)
		hits := keyword(t, s, "install", 10)
		if len(hits) != 1 {
			t.Fatalf("hits = %v, want one", chunkIDs(hits))
		}
		h := hits[0]
		if h.ChunkID != chunkID("d1", 1) || h.DocumentID != "d1" || h.Title != "Guide" ||
			h.Heading != "Guide > Install" || h.Content != "the install steps" || h.ChunkIndex != 1 ||
			h.Score <= 0 || math.IsInf(h.Score, 0) {
			t.Errorf("hit = %+v", h)
		}
	}},

	{"MoreMatchingTermsRankHigher", func(t *testing.T, s knowledge.Store) {
		addParagraphs(t, s, "one", "A", "apple only here, and some other words to pad the text")
		addParagraphs(t, s, "two", "B", "apple and banana here, and some other words to pad it")
		addParagraphs(t, s, "three", "C", "apple banana cherry, and some other words to pad it")
		addParagraphs(t, s, "none", "D", "nothing relevant at all in this one")
		hits := keyword(t, s, "apple banana cherry", 10)
		if got, want := docIDs(hits), []string{"three", "two", "one"}; !slices.Equal(got, want) {
			t.Errorf("documents = %v, want %v", got, want)
		}
		for i := 1; i < len(hits); i++ {
			if hits[i].Score > hits[i-1].Score {
				t.Errorf("scores not descending: %v then %v", hits[i-1].Score, hits[i].Score)
			}
		}
	}},

	{"KeywordSearchTermsSearchesTheTermsAsGiven", func(t *testing.T, s knowledge.Store) {
		// A query's expansion is searched as terms (knowledge.ExpansionTerms):
		// the bigram 变更 finds the page saying it, and no character of it
		// is added, so the page sharing only 变 is not found.
		addParagraphs(t, s, "changes", "发布说明", "每次发布的变更都记在这里。")
		addParagraphs(t, s, "other", "天气", "天气变冷了，记得加衣服。")
		addParagraphs(t, s, "en", "Notes", "Every released change is listed here.")
		hits, err := s.KeywordSearchTerms(t.Context(), []string{knowledge.DefaultTenant}, []string{"变更"}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := docIDs(hits); !slices.Equal(got, []string{"changes"}) || hits[0].Score <= 0 {
			t.Errorf("KeywordSearchTerms(变更) = %v (%+v), want the changes page alone", got, hits)
		}
		// Stems are searched as they are, with the query's scores: the
		// same term ranks as KeywordSearch ranks the word it comes from. (One
		// word: neighbouring query words may add a proximity bonus, which
		// terms never get.)
		viaTerms, err := s.KeywordSearchTerms(t.Context(), []string{knowledge.DefaultTenant}, []string{"releas"}, 10)
		if err != nil {
			t.Fatal(err)
		}
		viaQuery := keyword(t, s, "released", 10)
		if len(viaTerms) != 1 || len(viaQuery) != 1 || viaTerms[0].ChunkID != viaQuery[0].ChunkID ||
			math.Abs(viaTerms[0].Score-viaQuery[0].Score) > 1e-9 {
			t.Errorf("KeywordSearchTerms(releas) = %+v, want what KeywordSearch(released) finds, %+v", viaTerms, viaQuery)
		}
		for _, terms := range [][]string{nil, {}, {""}} {
			if hits, err := s.KeywordSearchTerms(t.Context(), []string{knowledge.DefaultTenant}, terms, 10); err != nil || len(hits) != 0 {
				t.Errorf("KeywordSearchTerms(%q) = %v, %v; want nothing", terms, chunkIDs(hits), err)
			}
		}
	}},

	{"KeywordSearchesRankEachQueryAsTheOneRankingMethods", func(t *testing.T, s knowledge.Store) {
		ss, ok := s.(knowledge.SnapshotSearcher)
		if !ok {
			return // the service calls the one-ranking methods for such a store
		}
		addParagraphs(t, s, "fork", "fork", "fork - create a child process", "The child process is a copy of the calling process.")
		addParagraphs(t, s, "wait", "wait", "wait - wait for a process", "A child made by fork must be waited for.")
		addParagraphs(t, s, "pipe", "pipe", "pipe - create a pipe", "A pipe joins two processes; a child inherits it.")
		tenants := []string{knowledge.DefaultTenant}
		queries := []knowledge.KeywordQuery{
			{Query: "how is a child process created"},
			{Terms: []string{"fork", "pipe"}},
			{Terms: []string{"fork"}, TitleOnly: true},
			{Query: "?! —"},
		}
		// Each ranking as the one-ranking methods give it; a title-only one
		// finds nothing in a store that has no title search.
		want := func() [][]knowledge.Hit {
			t.Helper()
			question, err := s.KeywordSearch(t.Context(), tenants, queries[0].Query, 10)
			if err != nil {
				t.Fatal(err)
			}
			terms, err := s.KeywordSearchTerms(t.Context(), tenants, queries[1].Terms, 10)
			if err != nil {
				t.Fatal(err)
			}
			var title []knowledge.Hit
			if ts, ok := s.(knowledge.TitleSearcher); ok {
				if title, err = ts.KeywordSearchTitleTerms(t.Context(), tenants, queries[2].Terms, 10); err != nil || len(title) == 0 {
					t.Fatalf("title search: %v, %v", title, err)
				}
			}
			if len(question) < 3 || len(terms) < 3 {
				t.Fatalf("one-ranking methods found %d and %d chunks, want at least 3 each", len(question), len(terms))
			}
			return [][]knowledge.Hit{question, terms, title, nil}
		}
		alone := want()
		if got, err := ss.KeywordSearches(t.Context(), tenants, queries, 10); err != nil || !reflect.DeepEqual(got, alone) {
			t.Fatalf("KeywordSearches = %+v, %v;\nwant %+v", got, err, alone)
		}
		if one, err := ss.KeywordSearches(t.Context(), tenants, queries[1:2], 10); err != nil || !reflect.DeepEqual(one, alone[1:2]) {
			t.Fatalf("one ranking: %+v, %v; want %+v", one, err, alone[1:2])
		}
		if none, err := ss.KeywordSearches(t.Context(), []string{"nobody"}, queries, 10); err != nil || len(none) != len(queries) ||
			none[0] != nil || none[1] != nil || none[2] != nil {
			t.Fatalf("a tenant with no documents: %+v, %v; want no hits for each query", none, err)
		}
		// Another tenant's documents take no place in any ranking, a
		// ranking with no terms first included.
		theirs, chunks := newDoc("theirs", "fork", "fork - their own fork of a child process")
		theirs.TenantID = "another"
		add(t, s, theirs, chunks)
		got, err := ss.KeywordSearches(t.Context(), tenants, append([]knowledge.KeywordQuery{queries[3]}, queries[:3]...), 10)
		if err != nil || got[0] != nil || !reflect.DeepEqual(got[1:], want()[:3]) {
			t.Fatalf("beside another tenant: %+v, %v; want no hits, then the rankings alone", got, err)
		}
	}},

	{"LimitBoundsTheHits", func(t *testing.T, s knowledge.Store) {
		for i := range 8 {
			addParagraphs(t, s, fmt.Sprintf("d%d", i), "T", fmt.Sprintf("common word number %d", i))
		}
		if hits := keyword(t, s, "common", 3); len(hits) != 3 {
			t.Errorf("limit 3: %d hits", len(hits))
		}
		if hits := keyword(t, s, "common", 0); len(hits) != 0 {
			t.Errorf("limit 0: %d hits", len(hits))
		}
	}},

	{"QueryWithoutMatchesOrTermsFindsNothing", func(t *testing.T, s knowledge.Store) {
		corpus(t, s)
		for _, q := range []string{"", "   ", "xylophone quartz", "?!…", "🚀🚀", "。，"} {
			if hits := keyword(t, s, q, 10); len(hits) != 0 {
				t.Errorf("KeywordSearch(%q) = %v, want nothing", q, chunkIDs(hits))
			}
		}
	}},

	{"QuerySyntaxIsNeverInterpreted", func(t *testing.T, s knowledge.Store) {
		corpus(t, s)
		for _, q := range hostileQueries {
			if _, err := s.KeywordSearch(t.Context(), []string{knowledge.DefaultTenant}, q, 10); err != nil {
				t.Errorf("KeywordSearch(%q): %v", q, err)
			}
		}
		// Operators are words like any other: NOT does not exclude.
		hits := keyword(t, s, "plugin NOT chain", 10)
		if !slices.Contains(docIDs(hits), "plugin") {
			t.Errorf("NOT was interpreted: %v", docIDs(hits))
		}
	}},

	{"TitleSearchMatchesATitleOrLeadNeverTheTextAlone", func(t *testing.T, s knowledge.Store) {
		ts, ok := s.(knowledge.TitleSearcher)
		if !ok {
			return // the service gives such a store no title-field scores
		}
		// The lead is a document's first paragraph (knowledge.Lead).
		addParagraphs(t, s, "fork", "fork", "fork - create a child process", "The call returns twice.")
		addParagraphs(t, s, "wait", "wait", "wait - wait for a process", "A child made by fork must be waited for.")
		addParagraphs(t, s, "tar", "tar", "tar - 档案文件管理程序", "解包时用 -C 指定目录。")
		addIn(t, s, "acme", "acme-fork", "fork", "fork - create a child process")
		tenants := []string{knowledge.DefaultTenant}
		for terms, want := range map[string][]string{
			"fork":      {"fork"}, // the title and lead of fork, the text of wait
			"child":     {"fork"}, // fork's lead, wait's text
			"fork wait": {"fork", "wait"},
			"tar":       {"tar"},
			"twice":     nil, // text alone
			"call 目录":   nil,
		} {
			hits, err := ts.KeywordSearchTitleTerms(t.Context(), tenants, strings.Fields(terms), 10)
			if err != nil {
				t.Fatalf("KeywordSearchTitleTerms(%s): %v", terms, err)
			}
			if got := slices.Sorted(slices.Values(docIDs(hits))); !slices.Equal(got, want) {
				t.Errorf("KeywordSearchTitleTerms(%s) found %v; want %v", terms, got, want)
			}
			for _, h := range hits {
				if !(h.Score > 0) {
					t.Errorf("KeywordSearchTitleTerms(%s): %s scored %v; want a positive score", terms, h.ChunkID, h.Score)
				}
			}
		}
		// Every chunk of a document holds its title field, and only that
		// field counts: fork's second chunk (its text without the word)
		// is found, and a chunk whose text says it too does not score
		// higher for it.
		addParagraphs(t, s, "clone", "clone", "clone - create a child process", "The call returns twice.", "The call returns twice: clone.")
		if hits, _ := ts.KeywordSearchTitleTerms(t.Context(), tenants, []string{"fork"}, 10); len(hits) != 2 {
			t.Errorf("title search for fork found chunks %v; want both of fork's", chunkIDs(hits))
		}
		score := map[string]float64{}
		hits, err := ts.KeywordSearchTitleTerms(t.Context(), tenants, []string{"clone"}, 10)
		for _, h := range hits {
			score[h.ChunkID] = h.Score
		}
		if err != nil || len(hits) != 3 || score[chunkID("clone", 2)] > score[chunkID("clone", 1)] {
			t.Errorf("title search for clone: %+v, %v; want its three chunks, the text's clone adding nothing", hits, err)
		}
		if hits, err := ts.KeywordSearchTitleTerms(t.Context(), []string{"globex"}, []string{"fork"}, 10); err != nil || len(hits) != 0 {
			t.Errorf("another tenant: %v, %v; want nothing", chunkIDs(hits), err)
		}
	}},
}

// hostileQueries are FTS5 syntax and other strings that must be searched
// for as text, never parsed.
var hostileQueries = []string{
	`"foo" AND (`, `foo"`, `"`, `""`, `(`, `)`, `*`, `foo*`, `^foo`, `-foo`, `+`, `:`, `title:foo`,
	`{title heading}: foo`, `NEAR(a b, 2)`, `NEAR(`, `a OR`, `AND`, `OR OR OR`, `NOT`, `a NOT b`,
	`'; DROP TABLE knowledge_chunks; --`, "\x00", "a\x00b", "\xff\xfe", `\`, `%`, `_`, `rank:`, `rowid`,
	"\u202e", "e\u0301", "\U0001F600", "中\"文", `"中文" OR "`, "𠀀𠀁", "ﬁ", "ǅ",
}

var vectorTests = []test{
	{"VectorSearchRanksByCosineSimilarity", func(t *testing.T, s knowledge.Store) {
		doc, chunks := newDoc("d1", "T", "east", "north-east", "north", "west")
		chunks[0].Embedding = []float32{1, 0, 0}
		chunks[1].Embedding = []float32{1, 1, 0}
		chunks[2].Embedding = []float32{0, 1, 0}
		chunks[3].Embedding = []float32{-1, 0, 0}
		add(t, s, doc, chunks)
		doc2, chunks2 := newDoc("d2", "T2", "mostly east", "keyword only")
		chunks2[0].Embedding = []float32{10, 1, 0} // length does not matter
		add(t, s, doc2, chunks2)

		hits := vector(t, s, []float32{2, 0, 0}, 10)
		want := []string{chunkID("d1", 0), chunkID("d2", 0), chunkID("d1", 1)}
		if got := chunkIDs(hits); !slices.Equal(got, want) {
			t.Fatalf("VectorSearch = %v, want %v (orthogonal and opposite left out)", got, want)
		}
		if math.Abs(hits[0].Score-1) > 1e-5 || math.Abs(hits[2].Score-math.Sqrt2/2) > 1e-5 {
			t.Errorf("scores = %v, %v; want cosines 1 and 0.7071", hits[0].Score, hits[2].Score)
		}
		if h := hits[1]; h.DocumentID != "d2" || h.Title != "T2" || h.Content != "mostly east" || h.ChunkIndex != 0 {
			t.Errorf("hit = %+v", h)
		}
		if got := chunkIDs(vector(t, s, []float32{1, 0.1, 0}, 2)); len(got) != 2 {
			t.Errorf("limit 2: %v", got)
		}
	}},

	{"VectorSearchSkipsOtherDimensionsAndZeroQueries", func(t *testing.T, s knowledge.Store) {
		doc, chunks := newDoc("d1", "T", "two", "three")
		chunks[0].Embedding = []float32{1, 0}
		chunks[1].Embedding = []float32{1, 0, 0}
		add(t, s, doc, chunks)
		if got := chunkIDs(vector(t, s, []float32{1, 0, 0}, 10)); !slices.Equal(got, []string{chunkID("d1", 1)}) {
			t.Errorf("3-dim query = %v, want only the 3-dim chunk", got)
		}
		for _, q := range [][]float32{nil, {0, 0, 0}, {float32(math.NaN()), 1, 0}} {
			if got := vector(t, s, q, 10); len(got) != 0 {
				t.Errorf("VectorSearch(%v) = %v, want nothing", q, chunkIDs(got))
			}
		}
	}},
}

var versionTests = []test{
	{"VersionChangesOnEveryAddAndDeleteOnly", func(t *testing.T, s knowledge.Store) {
		seen := map[int64]string{}
		note := func(step string) {
			v := version(t, s)
			if prev, dup := seen[v]; dup {
				t.Errorf("Version after %s = %d, the same as after %s", step, v, prev)
			}
			seen[v] = step
		}
		note("open")
		addParagraphs(t, s, "d1", "T", "alpha")
		note("add d1")
		addParagraphs(t, s, "d2", "T", "bravo")
		note("add d2")
		if err := s.DeleteDocument(t.Context(), "d1"); err != nil {
			t.Fatal(err)
		}
		note("delete d1")
		addParagraphs(t, s, "d1", "T", "alpha")
		note("add d1 again")

		v := version(t, s)
		keyword(t, s, "alpha", 10)
		vector(t, s, []float32{1}, 10)
		_, _, _ = s.Documents(t.Context(), knowledge.DefaultTenant, 10, 0)
		_ = s.DeleteDocument(t.Context(), "missing")
		doc, chunks := newDoc("d9", "T", "bravo")
		_, _ = s.AddDocument(t.Context(), doc, chunks) // duplicate of d2
		if got := version(t, s); got != v {
			t.Errorf("Version changed from %d to %d without a change", v, got)
		}
	}},
}
