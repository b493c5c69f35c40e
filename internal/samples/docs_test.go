package samples_test

// The sample documents are user documentation: these tests load every one
// of them the way chatpipe does, and check what they say about keys,
// defaults, environment variables, events, routes and error codes against
// the code, so that a change to the code that makes a document wrong
// fails here instead of misleading a user.

import (
	"fmt"
	"go/format"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/gin-gonic/gin"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/llm"
	"github.com/chatpipe/chatpipe/internal/samples"
	"github.com/chatpipe/chatpipe/pipeline"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
	_ "github.com/chatpipe/chatpipe/plugins" // the built-in plugins the documents configure
)

// sampleDoc is one file of samples.FS.
type sampleDoc struct {
	name string
	lang string // en | zh, from the file name
	text string
}

func readDocs(t *testing.T) []sampleDoc {
	t.Helper()
	var out []sampleDoc
	err := fs.WalkDir(samples.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(samples.FS, p)
		if err != nil {
			return err
		}
		lang, _, _ := strings.Cut(path.Base(p), "-")
		out = append(out, sampleDoc{name: p, lang: lang, text: string(data)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("samples.FS holds no documents")
	}
	return out
}

func docNamed(t *testing.T, docs []sampleDoc, name string) sampleDoc {
	t.Helper()
	for _, d := range docs {
		if d.name == name {
			return d
		}
	}
	t.Fatalf("no sample document %s", name)
	return sampleDoc{}
}

var (
	hanRune   = regexp.MustCompile(`\p{Han}`)
	latinWord = regexp.MustCompile(`[A-Za-z][A-Za-z0-9'’-]*`)
)

// Size bounds of a document: long enough to be worth a retrieval, short
// enough to read. Chinese is counted in Han characters (about 1.5 to 2 per
// English word) plus the English words it quotes (keys, commands).
const (
	minWords, maxWords = 300, 900
	minHan, maxHan     = 600, 1800
)

func TestEverySampleLoadsIntoTheKnowledgeBase(t *testing.T) {
	docs := readDocs(t)
	kb := openSampleKB(t, false)
	if len(kb.docs) != len(docs) {
		t.Fatalf("%d of %d sample files were stored (a duplicate or a non-Markdown file?)", len(kb.docs), len(docs))
	}
	titles := map[string]string{}
	for _, d := range kb.docs {
		chunks, err := kb.svc.Chunks(t.Context(), knowledge.DefaultTenant, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.Chunks == 0 || len(chunks) != d.Chunks {
			t.Errorf("%s: %d chunks stored, document says %d", d.Source, len(chunks), d.Chunks)
		}
		if other, dup := titles[d.Title]; dup {
			t.Errorf("%s and %s share the title %q", d.Source, other, d.Title)
		}
		titles[d.Title] = d.Source
		t.Logf("%-24s %2d chunks  %q", d.Source, d.Chunks, d.Title)
	}
}

func TestSamplesAreWellFormedAndCoverBothLanguages(t *testing.T) {
	docs := readDocs(t)
	topics := map[string][]string{} // topic -> languages
	for _, d := range docs {
		if d.lang != "en" && d.lang != "zh" {
			t.Errorf("%s: name it en-<topic>.md or zh-<topic>.md", d.name)
			continue
		}
		topic := strings.TrimPrefix(d.name, d.lang+"-")
		topics[topic] = append(topics[topic], d.lang)

		lines := strings.Split(d.text, "\n")
		if !strings.HasPrefix(lines[0], "# ") {
			t.Errorf("%s: must start with a # Title line, starts with %q", d.name, lines[0])
		}
		if n := strings.Count(d.text, "\n## "); n < 3 {
			t.Errorf("%s: %d ## sections, want at least 3", d.name, n)
		}
		han, words := len(hanRune.FindAllString(d.text, -1)), len(latinWord.FindAllString(d.text, -1))
		switch d.lang {
		case "en":
			if han > 0 {
				t.Errorf("%s: English document with %d Han characters", d.name, han)
			}
			if words < minWords || words > maxWords {
				t.Errorf("%s: %d words, want %d to %d", d.name, words, minWords, maxWords)
			}
		case "zh":
			if han < minHan || han > maxHan {
				t.Errorf("%s: %d Han characters, want %d to %d", d.name, han, minHan, maxHan)
			}
		}
	}
	for topic, langs := range topics {
		if len(langs) != 2 {
			t.Errorf("topic %s exists only in %v; write it in English and Chinese", topic, langs)
		}
	}
}

func TestQuestionSetIsLabelledWithExistingDocuments(t *testing.T) {
	docs := readDocs(t)
	qs := loadQuestions(t)
	labelled := map[string]int{}
	langs := map[string]int{}
	seen := map[string]bool{}
	for _, q := range qs {
		if seen[q.Q] {
			t.Errorf("question asked twice: %q", q.Q)
		}
		seen[q.Q] = true
		langs[q.Lang]++
		if hasHan := hanRune.MatchString(q.Q); hasHan != (q.Lang == "zh") {
			t.Errorf("%q: lang %q does not match its text", q.Q, q.Lang)
		}
		if !slices.Contains([]string{"direct", "paraphrase", "cross"}, q.Kind) {
			t.Errorf("%q: unknown kind %q", q.Q, q.Kind)
		}
		if len(q.Docs) == 0 {
			t.Errorf("%q: no answering document", q.Q)
		}
		for _, f := range q.Docs {
			if !slices.ContainsFunc(docs, func(d sampleDoc) bool { return d.name == f }) {
				t.Errorf("%q: no sample document %s", q.Q, f)
			}
			if q.Kind == "cross" && strings.HasPrefix(f, q.Lang+"-") {
				t.Errorf("%q: a cross-language question answered by %s, in its own language", q.Q, f)
			}
			labelled[f]++
		}
	}
	for _, d := range docs {
		if labelled[d.name] == 0 {
			t.Errorf("%s answers no question of questions.json", d.name)
		}
	}
	if d := langs["en"] - langs["zh"]; d < -2 || d > 2 {
		t.Errorf("questions: %d English, %d Chinese; keep them about even", langs["en"], langs["zh"])
	}
}

// short writes a default duration as the English documents do: 15s,
// 60s, 10m.
func short(d time.Duration) string {
	if d%time.Minute == 0 && d > time.Minute {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// zhDuration writes a default duration as the Chinese documents do.
func zhDuration(d time.Duration) string {
	if d%time.Minute == 0 && d > time.Minute {
		return fmt.Sprintf("%d 分钟", d/time.Minute)
	}
	return fmt.Sprintf("%d 秒", d/time.Second)
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

func TestSamplesQuoteTheDefaultsOfTheCode(t *testing.T) {
	docs := readDocs(t)
	def := config.Default()
	plugin := func(name, key string) string { return fmt.Sprint(def.Plugins[name][key]) }
	chain := func(mode string) string {
		entries, err := def.Chain(mode)
		if err != nil {
			t.Fatal(err)
		}
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name
		}
		return strings.Join(names, " → ")
	}
	// Each fact is what the English and the Chinese document of a topic
	// must say, written from the code's values.
	type fact struct{ topic, en, zh string }
	both := func(topic, s string) fact { return fact{topic, s, s} }
	facts := []fact{
		both("running.md", "go run ."),
		both("running.md", "go test ./..."),
		both("running.md", def.Server.Addr),
		both("running.md", def.Storage.SQLite.Path),
		both("running.md", "`knowledge.sample_docs`"),
		{"running.md", fmt.Sprintf("`limits.max_question_chars` (%d characters)", def.Limits.MaxQuestionChars),
			fmt.Sprintf("`limits.max_question_chars`（%d 个字符）", def.Limits.MaxQuestionChars)},
		{"running.md", "`limits.max_body_bytes` (" + mib(def.Limits.MaxBodyBytes) + ")",
			"`limits.max_body_bytes`（" + mib(def.Limits.MaxBodyBytes) + "）"},
		{"running.md", "`server.shutdown_grace` (" + short(def.Server.ShutdownGrace) + ")",
			"`server.shutdown_grace`（" + zhDuration(def.Server.ShutdownGrace) + "）"},
		{"running.md", "which is `" + def.DefaultMode + "`", "也就是 `" + def.DefaultMode + "`"},

		both("configuration.md", "default_mode: "+def.DefaultMode),
		both("configuration.md", chain("rag")),
		both("configuration.md", chain("chat")),
		{"configuration.md",
			fmt.Sprintf("`max_rounds` %s, within `max_tokens` %s", plugin("load_history", "max_rounds"), plugin("load_history", "max_tokens")),
			fmt.Sprintf("`max_rounds` 默认 %s 轮，总量不超过 `max_tokens` %s", plugin("load_history", "max_rounds"), plugin("load_history", "max_tokens"))},
		{"configuration.md",
			fmt.Sprintf("`top_k` %s, `threshold` %s and `min_keep` %s", plugin("rerank", "top_k"), plugin("rerank", "threshold"), plugin("rerank", "min_keep")),
			fmt.Sprintf("默认 `top_k` 为 %s，`threshold` 为 %s，`min_keep` 为 %s", plugin("rerank", "top_k"), plugin("rerank", "threshold"), plugin("rerank", "min_keep"))},
		{"configuration.md", "`score` (the default)", "`score`（默认）"},
		{"configuration.md", "`max_context_tokens` (" + plugin("merge", "max_context_tokens") + ")",
			"`max_context_tokens`（" + plugin("merge", "max_context_tokens") + "）"},

		both("models.md", llm.DefaultOllamaURL),
		{"models.md", fmt.Sprintf("(default %d)", llm.DefaultRetries), fmt.Sprintf("默认 %d 次", llm.DefaultRetries)},
		{"models.md", "(default " + short(llm.DefaultHeaderTimeout) + ")", "默认 " + zhDuration(llm.DefaultHeaderTimeout)},
		{"models.md", fmt.Sprintf("`think_tags: %t` (the default)", def.Plugins["chat_completion_stream"]["think_tags"]),
			fmt.Sprintf("`think_tags` 为 %t（默认）", def.Plugins["chat_completion_stream"]["think_tags"])},

		{"streaming.md", "`stream.heartbeat` (" + short(def.Stream.Heartbeat) + ")",
			"`stream.heartbeat`（" + zhDuration(def.Stream.Heartbeat) + "）"},
		{"streaming.md", fmt.Sprintf("`stream.max_events` (%d)", def.Stream.MaxEvents),
			fmt.Sprintf("`stream.max_events`（%d）", def.Stream.MaxEvents)},
		{"streaming.md", "`stream.max_bytes` (" + mib(def.Stream.MaxBytes) + ")",
			"`stream.max_bytes`（" + mib(def.Stream.MaxBytes) + "）"},
		{"streaming.md", "`stream.retention` (" + short(def.Stream.Retention) + ")",
			"`stream.retention`（" + zhDuration(def.Stream.Retention) + "）"},
		{"streaming.md", "`stream.max_duration` (" + short(def.Stream.MaxDuration) + ")",
			"`stream.max_duration`（" + zhDuration(def.Stream.MaxDuration) + "）"},

		{"knowledge-base.md", "`knowledge.max_upload_bytes` (" + mib(def.Knowledge.MaxUploadBytes) + ")",
			"`knowledge.max_upload_bytes`（" + mib(def.Knowledge.MaxUploadBytes) + "）"},
		{"knowledge-base.md", fmt.Sprintf("`knowledge.chunking.target_tokens` (%d)", def.Knowledge.Chunking.TargetTokens),
			fmt.Sprintf("`knowledge.chunking.target_tokens`（%d）", def.Knowledge.Chunking.TargetTokens)},
		{"knowledge-base.md", fmt.Sprintf("`overlap_tokens` (%d)", def.Knowledge.Chunking.OverlapTokens),
			fmt.Sprintf("`overlap_tokens`（%d）", def.Knowledge.Chunking.OverlapTokens)},
		{"knowledge-base.md", fmt.Sprintf("`rrf_k` %d", def.Knowledge.Search.RRFK),
			fmt.Sprintf("`rrf_k` 默认 %d", def.Knowledge.Search.RRFK)},
		{"knowledge-base.md", fmt.Sprintf("`top_k` (%d) candidates", def.Knowledge.Search.TopK),
			fmt.Sprintf("`top_k`（%d）个候选", def.Knowledge.Search.TopK)},
		{"knowledge-base.md", "`threshold` (" + plugin("rerank", "threshold"), "`threshold`（最高融合得分的 " + plugin("rerank", "threshold")},
		{"knowledge-base.md", "`lambda` " + plugin("rerank", "lambda"), "`lambda` 为 " + plugin("rerank", "lambda")},
		{"knowledge-base.md", "`top_k` (" + plugin("rerank", "top_k") + ") to merge", "`top_k`（" + plugin("rerank", "top_k") + "）个交给 merge"},
		{"knowledge-base.md", "`max_context_tokens` (" + plugin("merge", "max_context_tokens") + ")",
			"`max_context_tokens`（" + plugin("merge", "max_context_tokens") + "）"},
		{"knowledge-base.md", "`" + plugin("merge", "fallback") + "` (the default)", "`" + plugin("merge", "fallback") + "`（默认）"},
	}
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, f := range facts {
		for lang, want := range map[string]string{"en": f.en, "zh": f.zh} {
			d := docNamed(t, docs, lang+"-"+f.topic)
			if !strings.Contains(flat(d.text), flat(want)) {
				t.Errorf("%s does not say %q, which is what the code does", d.name, want)
			}
		}
	}
}

var (
	backticked = regexp.MustCompile("`([^`\n]+)`")
	dottedKey  = regexp.MustCompile(`^[a-z_]+(\.[a-z0-9_-]+|\[\d+\])+$`)
	envVar     = regexp.MustCompile(`CHATPIPE_[A-Za-z0-9_<>\p{Han}]*`)
	yamlBlock  = regexp.MustCompile("(?s)```yaml\n(.*?)```")
)

// configKeys are the keys config.yaml accepts, as dotted patterns in which
// "*" stands for any name (a model, a chat mode): every struct field of
// config.Config, models.*.<field>, pipelines.*, and plugins.<name>.<key>
// for every setting of the built-in plugins.
func configKeys() [][]string {
	var keys [][]string
	var walk func(t reflect.Type, prefix []string)
	walk = func(t reflect.Type, prefix []string) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			key := append(slices.Clone(prefix), tag)
			keys = append(keys, key)
			switch {
			case f.Type.Kind() == reflect.Struct:
				walk(f.Type, key)
			case tag == "models":
				keys = append(keys, append(slices.Clone(key), "*"))
				walk(f.Type.Elem(), append(slices.Clone(key), "*"))
			case tag == "pipelines":
				keys = append(keys, append(slices.Clone(key), "*"))
			}
		}
	}
	walk(reflect.TypeFor[config.Config](), nil)
	for name, section := range config.Default().Plugins {
		keys = append(keys, []string{"plugins", name})
		for k := range maps.Keys(section) {
			keys = append(keys, []string{"plugins", name, k})
		}
	}
	return keys
}

func isConfigKey(keys [][]string, key string) bool {
	parts := strings.Split(regexp.MustCompile(`\[\d+\]`).ReplaceAllString(key, ""), ".")
	return slices.ContainsFunc(keys, func(k []string) bool {
		if len(k) != len(parts) {
			return false
		}
		for i := range k {
			if k[i] != "*" && k[i] != parts[i] {
				return false
			}
		}
		return true
	})
}

// eventTypes is the wire vocabulary: eventbus.AllTypes and resync_required.
func eventTypes() []string {
	var out []string
	for _, ty := range eventbus.AllTypes {
		out = append(out, string(ty))
	}
	return append(out, string(eventbus.TypeResyncRequired))
}

func TestConfigKeysAndEventTypesInSamplesExist(t *testing.T) {
	keys := configKeys()
	types := eventTypes()
	top := map[string]bool{}
	for _, k := range keys {
		top[k[0]] = true
	}
	for _, d := range readDocs(t) {
		for _, m := range backticked.FindAllStringSubmatch(d.text, -1) {
			token, _, _ := strings.Cut(m[1], ": ") // `log.format: console`
			token = strings.TrimSpace(token)
			if !dottedKey.MatchString(token) || slices.Contains(types, token) {
				continue
			}
			first, _, _ := strings.Cut(token, ".")
			switch {
			case top[first]:
				if !isConfigKey(keys, token) {
					t.Errorf("%s mentions `%s`, which is not a config key", d.name, token)
				}
			case slices.Contains([]string{"thinking", "answer", "tool_call", "query"}, first):
				t.Errorf("%s mentions `%s`, which is not an event type", d.name, token)
			}
		}
	}
	// The streaming guides name the whole vocabulary.
	for _, name := range []string{"en-streaming.md", "zh-streaming.md"} {
		d := docNamed(t, readDocs(t), name)
		for _, ty := range types {
			if !strings.Contains(d.text, "`"+ty+"`") {
				t.Errorf("%s does not describe the event type %s", name, ty)
			}
		}
	}
}

func TestEnvironmentVariablesInSamplesExist(t *testing.T) {
	env := func(parts []string) string {
		return "CHATPIPE_" + strings.NewReplacer("-", "_").Replace(strings.ToUpper(strings.Join(parts, "_")))
	}
	known := map[string]bool{}
	var modelFields []string
	for _, k := range configKeys() {
		switch {
		case len(k) == 3 && k[0] == "models" && k[1] == "*":
			modelFields = append(modelFields, strings.ToUpper(k[2]))
		case !slices.Contains(k, "*"):
			known[env(k)] = true
		}
	}
	modelVar := regexp.MustCompile(`^CHATPIPE_MODELS_[A-Z0-9_]+_(` + strings.Join(modelFields, "|") + `)$`)
	pipelineVar := regexp.MustCompile(`^CHATPIPE_PIPELINES_[A-Z0-9_]+$`)
	found := 0
	for _, d := range readDocs(t) {
		for _, v := range envVar.FindAllString(d.text, -1) {
			if strings.ContainsAny(v, "<>") || strings.HasSuffix(v, "_") {
				continue // a pattern such as CHATPIPE_MODELS_<NAME>_API_KEY, or the prefix alone
			}
			found++
			if !known[v] && !modelVar.MatchString(v) && !pipelineVar.MatchString(v) {
				t.Errorf("%s mentions %s, which overrides no config key", d.name, v)
			}
		}
	}
	if found == 0 {
		t.Fatal("no CHATPIPE_ variable found in the samples; is the pattern broken?")
	}
}

// TestYAMLExamplesInSamplesLoad loads every YAML example of the samples as
// a config.yaml of its own: keys, values, models and plugin settings must
// all be accepted, as the user who copies one will expect.
func TestYAMLExamplesInSamplesLoad(t *testing.T) {
	n := 0
	for _, d := range readDocs(t) {
		for i, m := range yamlBlock.FindAllStringSubmatch(d.text, -1) {
			n++
			where := fmt.Sprintf("%s, YAML example %d", d.name, i+1)
			file := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(file, []byte(m[1]), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(file)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			if _, err := llm.NewRegistry(app.ModelOptions(cfg.Models), llm.RegistryOptions{}); err != nil {
				t.Errorf("%s: %v", where, err)
			}
			chains, err := cfg.Chains()
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			for mode, entries := range chains {
				chain := make([]pipeline.ChainEntry, len(entries))
				for j, e := range entries {
					chain[j] = pipeline.ChainEntry{Name: e.Name, Overrides: e.Overrides}
				}
				if _, err := pipeline.Build(mode, chain, cfg.Plugins); err != nil {
					t.Errorf("%s: %v", where, err)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no YAML example found in the samples")
	}
}

var (
	methodPath = regexp.MustCompile(`\b(GET|POST|PUT|PATCH|DELETE) (/[^\s` + "`" + `'";，。；）)]+)`)
	curlPath   = regexp.MustCompile(`-X (GET|POST|PUT|PATCH|DELETE) http://127\.0\.0\.1:8080(/[^\s'"\\]+)`)
	statusCode = regexp.MustCompile("\\b([1-5]\\d\\d) `([a-z_]+)`")
)

func TestRoutesInSamplesAreServed(t *testing.T) {
	engine, ok := handler.New(handler.Deps{Config: config.Default}).(*gin.Engine)
	if !ok {
		t.Fatal("handler.New no longer returns a *gin.Engine; adapt this test")
	}
	routes := engine.Routes()
	served := func(method, p string) bool {
		p, _, _ = strings.Cut(p, "?")
		parts := strings.Split(strings.TrimRight(p, "/.,:"), "/")
		return slices.ContainsFunc(routes, func(r gin.RouteInfo) bool {
			rp := strings.Split(r.Path, "/")
			if r.Method != method || len(rp) != len(parts) {
				return false
			}
			for i := range rp {
				if !strings.HasPrefix(rp[i], ":") && rp[i] != parts[i] {
					return false
				}
			}
			return true
		})
	}
	n := 0
	for _, d := range readDocs(t) {
		for _, re := range []*regexp.Regexp{methodPath, curlPath} {
			for _, m := range re.FindAllStringSubmatch(d.text, -1) {
				n++
				if !served(m[1], m[2]) {
					t.Errorf("%s mentions %s %s, which the API does not serve", d.name, m[1], m[2])
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no route found in the samples")
	}
}

// TestErrorCodesInSamplesMatchTheHandlers checks every "<status> `code`"
// a document names against the handler source: some line must answer
// with that code and that status.
func TestErrorCodesInSamplesMatchTheHandlers(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "handler", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("handler sources not found: %v", err)
	}
	var lines []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(string(src), "\n")...)
	}
	n := 0
	for _, d := range readDocs(t) {
		for _, m := range statusCode.FindAllStringSubmatch(d.text, -1) {
			n++
			var status int
			fmt.Sscan(m[1], &status)
			constant := "http.Status" + strings.Join(strings.FieldsFunc(http.StatusText(status), func(r rune) bool {
				return !unicode.IsLetter(r)
			}), "")
			code := `"` + m[2] + `"`
			if !slices.ContainsFunc(lines, func(l string) bool {
				return strings.Contains(l, constant) && strings.Contains(l, code)
			}) {
				t.Errorf("%s says %s %s; no handler answers %s with %s", d.name, m[1], m[2], code, constant)
			}
		}
	}
	if n == 0 {
		t.Fatal("no status code found in the samples")
	}
}

// TestWritingAPluginExampleCompilesAndFilters keeps the example of the
// plugin guide identical to example_plugin_test.go, which this package
// compiles, and runs it in a chain with the demo model.
func TestWritingAPluginExampleCompilesAndFilters(t *testing.T) {
	d := docNamed(t, readDocs(t), "en-writing-a-plugin.md")
	m := regexp.MustCompile("(?s)```go\n(package plugins\n.*?)```").FindStringSubmatch(d.text)
	if m == nil {
		t.Fatal("the guide has no complete example plugin (a go block starting with package plugins)")
	}
	want, err := format.Source([]byte(strings.Replace(m[1], "package plugins", "package samples_test", 1)))
	if err != nil {
		t.Fatalf("the guide's example does not parse: %v", err)
	}
	src, err := os.ReadFile("example_plugin_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(src), "\npackage samples_test\n")
	got, err := format.Source([]byte("package samples_test\n" + body))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("example_plugin_test.go and the guide's example differ; make them the same.\nguide:\n%s", want)
	}

	chain := pipelinetest.Chain(t, "rag",
		[]any{map[string]any{"word_filter": map[string]any{"words": []any{"demo"}}}, "chat_completion_stream"},
		map[string]map[string]any{"word_filter": {"mask": "[removed]"}})
	res := pipelinetest.Run(t.Context(), chain, pipelinetest.Request{
		Query:  "What are you?",
		Models: pipelinetest.Models{"default": pipelinetest.Demo()},
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if answer := res.Answer(); strings.Contains(answer, "demo") || !strings.Contains(answer, "[removed]") {
		t.Errorf("the filter did not mask the answer: %q", answer)
	}
	if st, ok := res.Stage("word_filter"); !ok || st.Status != eventbus.StageFinished {
		t.Errorf("word_filter stage = %+v, %v", st, ok)
	}

	_, err = pipelinetest.BuildChain("rag", []any{"word_filter", "chat_completion_stream"},
		map[string]map[string]any{"word_filter": {"mask_text": "x"}})
	if err == nil || !strings.Contains(err.Error(), "plugins.word_filter") || !strings.Contains(err.Error(), "mask_text") {
		t.Errorf("a misspelt setting gave %v; want an error naming plugins.word_filter and mask_text", err)
	}
}
