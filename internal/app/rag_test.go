package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/internal/samples"
)

func ragMode(c *config.Config) { c.DefaultMode = "rag" }

const (
	sourdough = "# Sourdough starter\n\n## Feeding\n\nFeed the sourdough starter twice a day with equal weights of rye flour and water. " +
		"Keep it at about 24 degrees so it doubles within six hours.\n\n## Storage\n\nA starter kept in the fridge needs feeding once a week."
	teaChinese = "# 绿茶冲泡指南\n\n## 水温\n\n冲泡龙井绿茶的水温以八十度左右为宜，水太烫会把茶叶烫熟，茶汤发苦。\n\n## 时间\n\n第一泡浸泡两分钟即可出汤。"
)

func (h *harness) addDocument(title, content string) handler.DocumentJSON {
	h.t.Helper()
	body, _ := json.Marshal(map[string]string{"title": title, "content": content})
	var d handler.DocumentJSON
	if code := h.call("POST", "/api/v1/knowledge/documents", string(body), &d); code != http.StatusCreated {
		h.t.Fatalf("add document: %d %+v", code, d)
	}
	return d
}

type searchResult struct {
	Method, Degraded string
	Hits             []handler.SearchHitJSON
}

func (h *harness) search(query string) searchResult {
	h.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "top_k": 5})
	var r searchResult
	if code := h.call("POST", "/api/v1/knowledge/search", string(body), &r); code != http.StatusOK {
		h.t.Fatalf("search: %d", code)
	}
	return r
}

func stages(evs []event) map[string]eventbus.Stage {
	out := map[string]eventbus.Stage{}
	for _, e := range evs {
		if st, ok := e.Payload.(eventbus.Stage); ok && st.Status != eventbus.StageStarted {
			out[st.Name] = st
		}
	}
	return out
}

func indexOf(evs []event, t eventbus.Type) int {
	for i, e := range evs {
		if e.Type == t {
			return i
		}
	}
	return -1
}

func TestRagAnswerCitesReferencesThatArriveBeforeIt(t *testing.T) {
	h := newHarness(t, ragMode)
	doc := h.addDocument("Starter care", sourdough)
	if doc.Chunks == 0 || doc.ID == "" {
		t.Fatalf("document = %+v", doc)
	}
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Feed it twice a day [1], and see [7].", 5)})
	session := h.createSession()
	s := h.ask(session, "How often should I feed the sourdough starter?")
	evs := s.all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("finished = %+v", fin)
	}

	refsAt, answerAt := indexOf(evs, eventbus.TypeReferences), indexOf(evs, eventbus.TypeAnswerStart)
	if refsAt < 0 || answerAt < 0 || refsAt > answerAt {
		t.Fatalf("references at %d, answer.start at %d: %v", refsAt, answerAt, types(evs))
	}
	refs := evs[refsAt].Payload.(eventbus.References).Items
	if len(refs) == 0 || refs[0].Index != 1 || refs[0].DocumentID != doc.ID || !strings.Contains(refs[0].Content, "twice a day") {
		t.Fatalf("references = %+v", refs)
	}
	st := stages(evs)
	for _, name := range []string{"load_history", "search", "rerank", "merge", "generate"} {
		if st[name].Status != eventbus.StageFinished {
			t.Errorf("stage %s = %+v", name, st[name])
		}
	}
	if st["rewrite"].Status != eventbus.StageSkipped {
		t.Errorf("rewrite without history = %+v, want skipped", st["rewrite"])
	}

	// The model saw the numbered context; the answer keeps only real citations.
	prompt := string(h.provider.Requests()[0].Raw)
	if !strings.Contains(prompt, `[1] Starter care`) || !strings.Contains(prompt, "twice a day with equal weights") {
		t.Fatalf("prompt lacks the numbered context: %s", prompt)
	}
	answer := text(evs, eventbus.TypeAnswerDelta)
	if !strings.Contains(answer, "[1]") || strings.Contains(answer, "[7]") {
		t.Fatalf("answer = %q: want [1] kept and the non-existent [7] removed", answer)
	}
	msg := h.message(session, s.messageID())
	if msg.Content != answer || len(msg.References) != len(refs) || msg.References[0].ChunkID != refs[0].ChunkID {
		t.Fatalf("saved = %+v", msg)
	}
}

func TestEnglishAndChineseQueriesFindTheirDocumentsAndDeleteRemovesThem(t *testing.T) {
	h := newHarness(t, ragMode)
	en := h.addDocument("", sourdough)
	zh := h.addDocument("", teaChinese)
	if en.Title != "Sourdough starter" || zh.Title != "绿茶冲泡指南" {
		t.Fatalf("titles from headings: %q %q", en.Title, zh.Title)
	}
	for q, want := range map[string]string{
		"how warm should the starter be": en.ID,
		"龙井的水温是多少":                       zh.ID,
		"泡茶时间":                           zh.ID,
	} {
		r := h.search(q)
		if len(r.Hits) == 0 || r.Hits[0].DocumentID != want || r.Method != "keyword" {
			t.Errorf("search %q: %+v", q, r)
		}
	}
	if code := h.call("DELETE", "/api/v1/knowledge/documents/"+zh.ID, "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	// The English page may still answer through the English bridge (水温:
	// water temperature); the deleted document must not.
	for _, hit := range h.search("龙井的水温是多少").Hits {
		if hit.DocumentID == zh.ID {
			t.Fatalf("deleted document still found: %+v", hit)
		}
	}
	var list struct {
		Documents []handler.DocumentJSON
		Total     int
	}
	h.call("GET", "/api/v1/knowledge/documents", "", &list)
	if list.Total != 1 || list.Documents[0].ID != en.ID {
		t.Fatalf("list after delete = %+v", list)
	}
	var got handler.DocumentJSON
	if code := h.call("GET", "/api/v1/knowledge/documents/"+en.ID, "", &got); code != 200 || !strings.Contains(got.Content, "rye flour") {
		t.Fatalf("get document: %d %+v", code, got)
	}
	// Uploading the same content again returns the stored document.
	var dup handler.DocumentJSON
	body, _ := json.Marshal(map[string]string{"content": sourdough})
	if code := h.call("POST", "/api/v1/knowledge/documents", string(body), &dup); code != http.StatusOK || !dup.Duplicate || dup.ID != en.ID {
		t.Fatalf("duplicate upload: %d %+v", code, dup)
	}
}

func multipartUpload(t *testing.T, filename, content, title string) (string, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if title != "" {
		_ = w.WriteField("title", title)
	}
	fw, _ := w.CreateFormFile("file", filename)
	_, _ = io.WriteString(fw, content)
	_ = w.Close()
	return b.String(), w.FormDataContentType()
}

func TestMultipartUploadsOfMarkdownAndHTML(t *testing.T) {
	h := newHarness(t, ragMode)
	for _, tc := range []struct{ file, content, want string }{
		{"notes.md", sourdough, "twice a day"},
		{"page.html", "<html><head><title>x</title><script>var secret=1</script></head><body><h1>Kettle descaling</h1><p>Descale the kettle monthly with citric acid.</p></body></html>", "citric acid"},
		{"plain.txt", "Bicycle chains need oil every 300 kilometres.", "300 kilometres"},
	} {
		body, ct := multipartUpload(t, tc.file, tc.content, "")
		resp := h.do(t.Context(), "POST", "/api/v1/knowledge/documents", body, "Content-Type", ct)
		var d handler.DocumentJSON
		_ = json.NewDecoder(resp.Body).Decode(&d)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || d.Source != tc.file || d.Chunks == 0 {
			t.Fatalf("%s: %d %+v", tc.file, resp.StatusCode, d)
		}
		var got handler.DocumentJSON
		h.call("GET", "/api/v1/knowledge/documents/"+d.ID, "", &got)
		if !strings.Contains(got.Content, tc.want) || strings.Contains(got.Content, "secret") || strings.Contains(got.Content, "<p>") {
			t.Fatalf("%s: stored content %q", tc.file, got.Content)
		}
	}
}

func TestBadUploadsAndSearchesGetClearErrorsAndStoreNothing(t *testing.T) {
	h := newHarness(t, ragMode, func(c *config.Config) { c.Knowledge.MaxUploadBytes = 1000 })
	big, bigCT := multipartUpload(t, "big.md", strings.Repeat("word ", 300), "")
	bin, binCT := multipartUpload(t, "data.txt", "\x00\x01\x02binary\xff\xfe", "")
	pdf, pdfCT := multipartUpload(t, "paper.pdf", "%PDF-1.7", "")
	exe, exeCT := multipartUpload(t, "tool.exe", "MZ", "")
	latin1, latin1CT := multipartUpload(t, "menu.txt", "Caf\xe9 cr\xe8me br\xfbl\xe9e\n", "")
	utf16, utf16CT := multipartUpload(t, "menu.txt", "\xff\xfeC\x00a\x00f\x00\xe9\x00", "")
	noFile := "--x\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nt\r\n--x--\r\n"
	for _, tc := range []struct {
		method, path, body, ct string
		status                 int
		code                   string
	}{
		{"POST", "/api/v1/knowledge/documents", `{"content":""}`, "", 400, "empty_document"},
		{"POST", "/api/v1/knowledge/documents", `{"content":"   \n\t "}`, "", 400, "empty_document"},
		{"POST", "/api/v1/knowledge/documents", `{"content":"` + strings.Repeat("x", 1200) + `"}`, "", 413, "document_too_large"},
		{"POST", "/api/v1/knowledge/documents", `{"content":"bad\u0000nul"}`, "", 400, "binary_document"},
		{"POST", "/api/v1/knowledge/documents", `{"content":`, "", 400, "invalid_json"},
		{"POST", "/api/v1/knowledge/documents", ` null`, "", 400, "invalid_json"},
		{"POST", "/api/v1/knowledge/documents", big, bigCT, 413, "document_too_large"},
		{"POST", "/api/v1/knowledge/documents", bin, binCT, 400, "binary_document"},
		{"POST", "/api/v1/knowledge/documents", latin1, latin1CT, 400, "not_utf8"},
		{"POST", "/api/v1/knowledge/documents", utf16, utf16CT, 400, "not_utf8"},
		{"POST", "/api/v1/knowledge/documents", pdf, pdfCT, 422, "corrupt_document"},
		{"POST", "/api/v1/knowledge/documents", exe, exeCT, 415, "unsupported_type"},
		{"POST", "/api/v1/knowledge/documents", noFile, "multipart/form-data; boundary=x", 400, "missing_file"},
		{"GET", "/api/v1/knowledge/documents/nope", "", "", 404, "document_not_found"},
		{"DELETE", "/api/v1/knowledge/documents/nope", "", "", 404, "document_not_found"},
		{"GET", "/api/v1/knowledge/documents?limit=9999", "", "", 400, "invalid_query"},
		{"POST", "/api/v1/knowledge/search", `{"query":""}`, "", 400, "empty_query"},
		{"POST", "/api/v1/knowledge/search", `{"query":"` + strings.Repeat("w ", 20000) + `"}`, "", 400, "query_too_long"},
		{"POST", "/api/v1/knowledge/search", `{"query":"x","top_k":1.5}`, "", 400, "invalid_field"},
		{"POST", "/api/v1/knowledge/search", `{"query":"x","top_k":0}`, "", 400, "invalid_top_k"},
		{"POST", "/api/v1/knowledge/search", `{"query":"x","top_k":1000}`, "", 400, "invalid_top_k"},
		{"POST", "/api/v1/knowledge/search", `{"query":"x","top_k":"3"}`, "", 400, "invalid_field"},
	} {
		header := []string{}
		if tc.ct != "" {
			header = []string{"Content-Type", tc.ct}
		}
		resp := h.do(t.Context(), tc.method, tc.path, tc.body, header...)
		var e handler.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != tc.status || e.Error.Code != tc.code || e.Error.Message == "" {
			t.Errorf("%s %s: %d %+v, want %d %s", tc.method, tc.path, resp.StatusCode, e, tc.status, tc.code)
		}
	}
	if total := h.documentTotal(); total != 0 {
		t.Fatalf("%d documents stored from rejected uploads", total)
	}
}

// Every non-essential stage that fails degrades, says so in its stage
// event, and the answer still arrives.
func TestRetrievalStagesDegradeAndSaySo(t *testing.T) {
	t.Run("embedding endpoint down: keyword only", func(t *testing.T) {
		emb := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 64})
		emb.Fail(http.StatusServiceUnavailable, 1000)
		h := newHarness(t, ragMode, func(c *config.Config) {
			c.Knowledge.Embedding = config.Embedding{Provider: "openai", BaseURL: emb.BaseURL(), Model: "e", BatchSize: 8, Timeout: 5e9}
		})
		var d handler.DocumentJSON
		body, _ := json.Marshal(map[string]string{"content": sourdough})
		if code := h.call("POST", "/api/v1/knowledge/documents", string(body), &d); code != http.StatusCreated || d.Embedded || d.Warning == "" {
			t.Fatalf("upload with embeddings down: %d %+v", code, d)
		}
		h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Twice a day [1].", 2)})
		evs := h.ask(h.createSession(), "how often to feed the starter").all()
		st := stages(evs)["search"]
		if st.Status != eventbus.StageFinished || !strings.Contains(st.Detail, "keyword") {
			t.Fatalf("search stage = %+v", st)
		}
		if indexOf(evs, eventbus.TypeReferences) < 0 || finished(t, evs).Status != eventbus.StatusCompleted {
			t.Fatalf("events: %v", types(evs))
		}
	})

	t.Run("rerank API down: fused order", func(t *testing.T) {
		h := newHarness(t, ragMode, func(c *config.Config) {
			c.Plugins["rerank"]["reranker"] = "remote"
			c.Plugins["rerank"]["remote_base_url"] = "http://127.0.0.1:1/v1"
			c.Plugins["rerank"]["remote_model"] = "r"
		})
		h.addDocument("", sourdough)
		h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Twice a day [1].", 2)})
		evs := h.ask(h.createSession(), "how often to feed the starter").all()
		st := stages(evs)["rerank"]
		if st.Status != eventbus.StageFinished || !strings.Contains(st.Detail, "fused order") {
			t.Fatalf("rerank stage = %+v", st)
		}
		if refs := evs[indexOf(evs, eventbus.TypeReferences)].Payload.(eventbus.References); len(refs.Items) == 0 {
			t.Fatal("no references after a rerank failure")
		}
	})

	t.Run("rewrite model error: the original question", func(t *testing.T) {
		h := newHarness(t, ragMode)
		h.addDocument("", sourdough)
		session := h.createSession()
		h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Twice a day [1].", 2)})
		h.ask(session, "how often to feed the starter").all()
		h.provider.Enqueue(
			providertest.Script{Status: 500},                                          // the rewrite call
			providertest.Script{Chunks: providertest.Answer("In the fridge [1].", 2)}, // the answer
		)
		evs := h.ask(session, "and where do I keep it").all()
		st := stages(evs)["rewrite"]
		if st.Status != eventbus.StageFinished || st.Detail == "" {
			t.Fatalf("rewrite stage = %+v", st)
		}
		if indexOf(evs, eventbus.TypeQueryRewritten) >= 0 {
			t.Fatal("query.rewritten sent although the rewrite failed")
		}
		if finished(t, evs).Status != eventbus.StatusCompleted {
			t.Fatal("the answer failed after a rewrite error")
		}
		last := h.provider.Requests()[len(h.provider.Requests())-1]
		if !strings.Contains(string(last.Raw), "Question: and where do I keep it") {
			t.Fatalf("the answer prompt does not carry the original question: %s", last.Raw)
		}
	})

	t.Run("nothing found: fixed fallback", func(t *testing.T) {
		h := newHarness(t, ragMode, func(c *config.Config) { c.Plugins["merge"]["fallback"] = "fixed" })
		h.addDocument("", sourdough)
		session := h.createSession()
		s := h.ask(session, "quantum chromodynamics lattice")
		evs := s.all()
		fixed := h.app.Config().Plugins["merge"]["fallback_text"].(string)
		if got := text(evs, eventbus.TypeAnswerDelta); got != fixed {
			t.Fatalf("fallback answer = %q", got)
		}
		if refs := evs[indexOf(evs, eventbus.TypeReferences)].Payload.(eventbus.References); len(refs.Items) != 0 {
			t.Fatalf("references = %+v", refs)
		}
		if len(h.provider.Requests()) != 0 {
			t.Fatal("the model was called for a fixed fallback")
		}
		if msg := h.message(session, s.messageID()); msg.Content != fixed || msg.Status != "completed" {
			t.Fatalf("saved = %+v", msg)
		}
	})

	t.Run("nothing found: the model answers without context and says so", func(t *testing.T) {
		h := newHarness(t, ragMode)
		h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("The knowledge base does not cover this.", 2)})
		evs := h.ask(h.createSession(), "quantum chromodynamics lattice").all()
		if text(evs, eventbus.TypeAnswerDelta) == "" || finished(t, evs).Status != eventbus.StatusCompleted {
			t.Fatalf("events: %v", types(evs))
		}
		prompt := string(h.provider.Requests()[0].Raw)
		if !strings.Contains(prompt, "Context:") {
			t.Fatalf("prompt: %s", prompt)
		}
	})
}

// What go run . gives a new user: the offline demo model answering, in the
// default rag mode, from the bundled sample knowledge base, with [n]
// citations that point at the references sent before the answer.
func TestOfflineDefaultsAnswerFromTheSampleKnowledgeBaseWithCitations(t *testing.T) {
	provider := providertest.New(t)
	cfg := config.Default()
	cfg.Storage.SQLite.Path = filepath.Join(t.TempDir(), "chatpipe.db")
	m := cfg.Models["default"]
	m.ChunkDelay = 0
	cfg.Models["default"] = m
	h := startHarnessWith(t, provider, cfg, app.Options{Samples: samples.FS})

	if total := h.documentTotal(); total == 0 {
		t.Fatal("the sample knowledge base was not loaded")
	}
	session := h.createSession()
	for _, q := range []string{"How do I resume a stream after a dropped connection?", "如何停止正在生成的回答？"} {
		s := h.ask(session, q)
		evs := s.all()
		if finished(t, evs).Status != eventbus.StatusCompleted {
			t.Fatalf("%s: %v", q, types(evs))
		}
		refsAt, answerAt := indexOf(evs, eventbus.TypeReferences), indexOf(evs, eventbus.TypeAnswerStart)
		if refsAt < 0 || answerAt < refsAt {
			t.Fatalf("%s: references at %d, answer at %d", q, refsAt, answerAt)
		}
		refs := evs[refsAt].Payload.(eventbus.References).Items
		answer := text(evs, eventbus.TypeAnswerDelta)
		cited := citedNumbers(answer)
		if len(refs) == 0 || len(cited) == 0 {
			t.Fatalf("%s: %d references, answer %q", q, len(refs), answer)
		}
		for _, n := range cited {
			if n < 1 || n > len(refs) {
				t.Fatalf("%s: answer cites [%d] but there are %d references: %q", q, n, len(refs), answer)
			}
		}
		if !strings.Contains(answer, "demo") && !strings.Contains(answer, "演示") {
			t.Fatalf("%s: the demo answer is not labelled as a demo: %q", q, answer)
		}
	}
	if len(provider.Requests()) != 0 {
		t.Fatal("the offline defaults called a provider")
	}
}

func citedNumbers(s string) []int {
	var out []int
	for i := 0; i < len(s); i++ {
		if s[i] != '[' {
			continue
		}
		j := i + 1
		n := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			n = n*10 + int(s[j]-'0')
			j++
		}
		if j > i+1 && j < len(s) && s[j] == ']' {
			out = append(out, n)
		}
	}
	return out
}

// The search puts the best passage of each of its first documents ahead of
// a first document's other passages; rerank keeps that order, so a long
// document whose every section matches cannot fill the context alone and
// push out the second document that answers the question too.
func TestRagContextHoldsTheSecondDocumentAheadOfTheFirstOnesOtherPassages(t *testing.T) {
	h := newHarness(t, ragMode)
	var manual strings.Builder
	manual.WriteString("# Kiln manual\n\n")
	for i := range 9 {
		fmt.Fprintf(&manual, "## Firing schedule %d\n\n", i+1)
		for j := range 12 {
			fmt.Fprintf(&manual, "Kiln firing temperature step %d.%d: raise the kiln firing temperature slowly and hold the kiln at temperature before cooling. ", i+1, j+1)
		}
		manual.WriteString("\n\n")
	}
	first := h.addDocument("Kiln manual", manual.String())
	if first.Chunks < 7 {
		t.Fatalf("the manual has %d passages; the test needs more than rerank keeps (6)", first.Chunks)
	}
	second := h.addDocument("Glaze notes", "# Glaze notes\n\nA celadon glaze matures when the kiln firing temperature "+
		"reaches cone ten; mix the glaze with water to the thickness of cream, dip the pot for three seconds, "+
		"wipe the foot clean and let it dry a day before it goes in.")

	// The search ranks the notes second among documents, below many of the
	// manual's passages by score.
	hits := h.search("kiln firing temperature").Hits
	if len(hits) < 2 || hits[0].DocumentID != first.ID || hits[1].DocumentID != second.ID {
		t.Fatalf("search order = %+v, want the manual then the notes", hits)
	}

	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Cone ten [2].", 3)})
	s := h.ask(h.createSession(), "kiln firing temperature")
	evs := s.all()
	refsAt := indexOf(evs, eventbus.TypeReferences)
	if refsAt < 0 {
		t.Fatalf("no references: %v", types(evs))
	}
	var docs []string
	for _, r := range evs[refsAt].Payload.(eventbus.References).Items {
		docs = append(docs, r.DocumentID)
	}
	if len(docs) < 2 || docs[0] != first.ID || docs[1] != second.ID {
		t.Fatalf("references' documents = %v, want the manual %s first and the notes %s second", docs, first.ID, second.ID)
	}
}
