package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// Every plugin config error names the key the operator wrote, where it
// came from (the file or a CHATPIPE_* variable) and what is accepted —
// once, without mapstructure's wording, and at the section at fault.
func TestPluginConfigErrorsNameTheKeyTheSourceAndTheChoices(t *testing.T) {
	cases := []struct {
		name    string
		yaml    string
		env     map[string]string
		want    []string
		notWant []string
	}{
		{name: "unknown key in a plugin section",
			yaml: "plugins:\n  load_history:\n    max_roundz: 3\n",
			want: []string{`plugins.load_history.max_roundz: unknown key (plugins.load_history takes: `, "max_rounds",
				`did you mean "max_rounds"?`, "[in "},
			notWant: []string{"plugins.load_history: plugins.load_history", "''", "decoding failed", "agent_loop"}},
		{name: "an error in rerank is rerank's, not agent_loop's",
			yaml:    "plugins:\n  rerank:\n    top_kk: 3\n",
			want:    []string{"plugins.rerank.top_kk: unknown key (plugins.rerank takes: ", `did you mean "top_k"?`},
			notWant: []string{"agent_loop", "tools[0]"}},
		{name: "unknown plugin in a mode's list",
			yaml:    "pipelines:\n  rag: [load_history, rewrite, search, rerank, merg, chat_completion_stream]\n",
			want:    []string{`pipelines.rag[4]: unknown plugin "merg" (known: `, "chat_completion_stream", `did you mean "merge"?`},
			notWant: []string{"plugins.merg"}},
		{name: "a bad value from the environment",
			yaml: "plugins:\n  rerank:\n    top_k: 5\n",
			env:  map[string]string{"CHATPIPE_PLUGINS_RERANK_TOP_K": "0"},
			want: []string{"plugins.rerank.top_k", "[from CHATPIPE_PLUGINS_RERANK_TOP_K]"}},
		{name: "a bad value type",
			yaml:    "plugins:\n  load_history:\n    max_rounds: lots\n",
			want:    []string{"plugins.load_history.max_rounds: ", "lots"},
			notWant: []string{"plugins.load_history: plugins.load_history"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			provider := providertest.New(t)
			base := baseConfig(t, provider)
			cfg.Storage.SQLite.Path, cfg.Models, cfg.Knowledge.SampleDocs = base.Storage.SQLite.Path, base.Models, false
			a, err := app.New(context.Background(), cfg, app.Options{})
			if err == nil {
				_ = a.Close()
				t.Fatal("the config was accepted")
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not say %q:\n%s", w, msg)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(msg, w) {
					t.Errorf("error says %q:\n%s", w, msg)
				}
			}
		})
	}
}
