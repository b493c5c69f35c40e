package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// firstTitle is the title of the search's first hit ("" for none).
func (h *harness) firstTitle(query string) string {
	h.t.Helper()
	if r := h.search(query); len(r.Hits) > 0 {
		return r.Hits[0].Title
	}
	return ""
}

// A question's words bring the other words of their synonym group into the
// search (knowledge.search.synonym_weight, builtin_synonyms): "delete"
// finds a page saying "erase", 删除 one saying 移除, through the HTTP API.
// With the weight 0 the same knowledge base ranks the other page first, so
// the groups are what moves it.
func TestSearchFindsTheSynonymsOfTheQuestionsWords(t *testing.T) {
	docs := [][2]string{
		{"Erasing backups", "Erase the old backups every week to keep the disk tidy."},
		{"Keeping backups", "Old backups stay on the disk. Backups are listed weekly, and old backups are kept for a month."},
		{"清理", "定期移除旧的日志，磁盘才不会满。"},
		{"日志说明", "旧日志不要删，旧日志保存一个月。"},
	}
	// Unrelated pages, so that bm25's inverse document frequency means
	// something (over four pages every shared word is common).
	for _, f := range []string{"绿茶的水温以八十度为宜。", "周末去公园散步。", "The train leaves at noon.",
		"Bread needs flour, water and salt.", "会议改到下午三点。", "Cats sleep most of the day."} {
		docs = append(docs, [2]string{f, f})
	}
	cases := []struct{ query, with, without string }{
		{"delete old backups", "Erasing backups", "Keeping backups"},
		{"删除旧日志", "清理", "日志说明"},
	}
	on := newHarness(t)
	off := newHarness(t, func(c *config.Config) { c.Knowledge.Search.SynonymWeight = 0 })
	for _, h := range []*harness{on, off} {
		for _, d := range docs {
			h.addDocument(d[0], d[1])
		}
	}
	for _, c := range cases {
		if got := on.firstTitle(c.query); got != c.with {
			t.Errorf("%q with synonyms: first hit %q, want %q", c.query, got, c.with)
		}
		if got := off.firstTitle(c.query); got != c.without {
			t.Errorf("%q without synonyms: first hit %q, want %q (else this test shows nothing)", c.query, got, c.without)
		}
	}
}

// An operator's own groups (knowledge.search.synonyms_file) are read at
// start and on each reload, which a change of the file alone starts (the
// config watcher follows it, through the symlinks of a Kubernetes
// ConfigMap too); a file that cannot be used is refused with its line, at
// start (the server does not start) and on a reload (the configuration and
// the groups in force stay), and nothing is lost.
func TestOperatorSynonymsFileIsReadAtStartAndOnReload(t *testing.T) {
	provider := providertest.New(t)
	dir := t.TempDir()
	configPath := filepath.Join(dir, "config.yaml")
	// As a ConfigMap mounts it: synonyms.txt -> ..data/synonyms.txt, and
	// ..data -> the current version's folder, swapped by a rename.
	mount := t.TempDir()
	synonymsPath := filepath.Join(mount, "synonyms.txt")
	version := 0
	publish := func(text string) {
		t.Helper()
		version++
		v := fmt.Sprintf("..v%d", version)
		if err := os.Mkdir(filepath.Join(mount, v), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mount, v, "synonyms.txt"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(v, filepath.Join(mount, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(mount, "..data_tmp"), filepath.Join(mount, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	yaml := func(path, weight string) string {
		return `
storage:
  sqlite:
    path: ` + filepath.Join(dir, "db.sqlite") + `
models:
  default:
    provider: openai
    base_url: ` + provider.BaseURL() + `
    model: fake
knowledge:
  search:
    synonym_weight: ` + weight + `
    builtin_synonyms: false
    synonyms_file: ` + path + `
`
	}
	start := func(path string) error {
		t.Helper()
		replaceFile(t, configPath, yaml(path, "0.5"))
		cfg, err := config.Load(configPath)
		if err != nil {
			t.Fatal(err)
		}
		_, err = app.New(context.Background(), cfg, app.Options{})
		return err
	}

	// At start, a file that cannot be used stops the server with a message
	// naming the key, and the line or the reason.
	publish("invoice, bill\nstatement\n")
	if err := os.Symlink(filepath.Join("..data", "synonyms.txt"), synonymsPath); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{synonymsPath, "line 2"},
		{mount, "not a regular file"},
		{filepath.Join(dir, "missing.txt"), "no such file"},
	} {
		if err := start(c.path); err == nil || !strings.Contains(err.Error(), "knowledge.search.synonyms_file") ||
			!strings.Contains(err.Error(), c.want) {
			t.Fatalf("app.New with synonyms_file %s: %v, want an error naming the key and %q", c.path, err, c.want)
		}
	}

	publish("# our words\ninvoice, bill\n")
	replaceFile(t, configPath, yaml(synonymsPath, "0.5"))
	cfg, err := config.Load(configPath)
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, provider, cfg, configPath)
	h.addDocument("Invoices", "Send the invoice to the customer by email.")
	h.addDocument("Newsletter", "Send the newsletter to the customer by email every week, with the email list.")
	if got := h.firstTitle("email the bill"); got != "Invoices" {
		t.Fatalf("email the bill: first hit %q, want Invoices (bill ~ invoice in the file)", got)
	}
	if got := h.firstTitle("email the statement"); got != "Newsletter" {
		t.Fatalf("email the statement before the edit: first hit %q, want Newsletter", got)
	}

	// A new version of the mounted file reloads the configuration.
	before := h.app.Config()
	publish("invoice, bill, statement\n")
	waitFor(t, "the reload", func() bool { return h.app.Config() != before })
	if got := h.firstTitle("email the statement"); got != "Invoices" {
		t.Fatalf("email the statement after the file changed: first hit %q, want Invoices", got)
	}

	// A broken version is refused; the configuration and groups in force stay.
	before = h.app.Config()
	publish("invoice,, bill\n")
	h.waitLog("config reload rejected")
	if h.app.Config() != before {
		t.Fatal("a reload with a broken synonyms file was applied")
	}
	if got := h.firstTitle("email the statement"); got != "Invoices" {
		t.Fatalf("after a refused reload: first hit %q, want Invoices", got)
	}

	// An editor's save (a plain file renamed over the link) reloads too,
	// and so does a change of the config file.
	replaceFile(t, synonymsPath, "invoice, bill, receipt\n")
	waitFor(t, "the reload", func() bool { return h.firstTitle("email the receipt") == "Invoices" })
	replaceFile(t, configPath, yaml(synonymsPath, "0.6"))
	waitFor(t, "the reload", func() bool { return h.app.Config().Knowledge.Search.SynonymWeight == 0.6 })
	if n := len(h.search("newsletter").Hits); n == 0 {
		t.Fatal("the knowledge base lost its documents")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
