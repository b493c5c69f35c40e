package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// writeConfig writes content to config.yaml in a fresh directory and
// returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustLoad(t *testing.T, path string) *Config {
	t.Helper()
	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%q): %v", path, err)
	}
	return cfg
}

// errorKeys lists the Key of every KeyError inside err.
func errorKeys(err error) []string {
	var keys []string
	var walk func(error)
	walk = func(e error) {
		if ke, ok := e.(*KeyError); ok {
			keys = append(keys, ke.Key)
			return
		}
		if multi, ok := e.(interface{ Unwrap() []error }); ok {
			for _, sub := range multi.Unwrap() {
				walk(sub)
			}
			return
		}
		if inner := errors.Unwrap(e); inner != nil {
			walk(inner)
		}
	}
	walk(err)
	return keys
}

func TestLoadWithoutDefaultFileRunsOnBuiltinDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, path := range []string{"", DefaultPath, "./config.yaml"} {
		cfg := mustLoad(t, path)
		if cfg.File != "" {
			t.Errorf("Load(%q).File = %q, want empty (no file read)", path, cfg.File)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("built-in defaults do not validate: %v", err)
		}
		if !reflect.DeepEqual(cfg, Default()) {
			t.Errorf("Load(%q) with no file differs from Default():\n got %v\nwant %v", path, cfg, Default())
		}
	}

	cfg := Default()
	checks := []struct {
		key       string
		got, want any
	}{
		{"server.addr", cfg.Server.Addr, "127.0.0.1:8080"},
		{"server.read_header_timeout", cfg.Server.ReadHeaderTimeout, 10 * time.Second},
		{"server.write_timeout", cfg.Server.WriteTimeout, 30 * time.Second},
		{"server.shutdown_grace", cfg.Server.ShutdownGrace, 20 * time.Second},
		{"log.level", cfg.Log.Level, "info"},
		{"log.format", cfg.Log.Format, "json"},
		{"limits.max_body_bytes", cfg.Limits.MaxBodyBytes, int64(1 << 20)},
		{"limits.max_question_chars", cfg.Limits.MaxQuestionChars, 8000},
		{"limits.max_title_chars", cfg.Limits.MaxTitleChars, 200},
		{"stream.heartbeat", cfg.Stream.Heartbeat, 15 * time.Second},
		{"stream.max_events", cfg.Stream.MaxEvents, 20000},
		{"stream.max_bytes", cfg.Stream.MaxBytes, int64(8 << 20)},
		{"stream.retention", cfg.Stream.Retention, 10 * time.Minute},
		{"stream.max_duration", cfg.Stream.MaxDuration, 10 * time.Minute},
		{"stream_store", cfg.StreamStore, "memory"},
		{"storage.driver", cfg.Storage.Driver, "sqlite"},
		{"storage.sqlite.path", cfg.Storage.SQLite.Path, "./data/chatpipe.db"},
		{"models", cfg.Models, map[string]Model{"default": {Provider: "demo", ChunkDelay: 30 * time.Millisecond}}},
		{"default_mode", cfg.DefaultMode, "rag"},
		{"pipelines", cfg.Pipelines, map[string][]any{
			"rag":   {"load_history", "rewrite", "search", "rerank", "merge", "chat_completion_stream"},
			"chat":  {"load_history", "chat_completion_stream"},
			"agent": {"load_history", "agent_loop"},
		}},
		{"plugins.load_history", cfg.Plugins["load_history"], map[string]any{"max_rounds": 5, "max_tokens": 3000, "tool_calls": false,
			"compaction": map[string]any{"enabled": true, "model": "", "budget_tokens": 0, "keep_rounds": 2, "timeout": "60s",
				"prompt": DefaultCompactionPrompt}}},
		{"plugins.rewrite.model", cfg.Plugins["rewrite"]["model"], "default"},
		{"plugins.rerank.reranker", cfg.Plugins["rerank"]["reranker"], "score"},
		{"plugins.merge.fallback", cfg.Plugins["merge"]["fallback"], "model"},
		{"plugins.chat_completion_stream", cfg.Plugins["chat_completion_stream"],
			map[string]any{"model": "default", "think_tags": true, "system_prompt": DefaultSystemPrompt,
				"rag_prompt": DefaultRAGPrompt}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.key, c.got, c.want)
		}
	}
}

func TestLoadExplicitMissingFileFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chatpipe.yaml")
	_, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load(missing explicit path) = %v, want an error wrapping fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
}

func TestRepoConfigYAMLMatchesBuiltinDefaults(t *testing.T) {
	cfg := mustLoad(t, filepath.Join("..", DefaultPath))
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config.yaml does not validate: %v", err)
	}
	cfg.File = ""
	if !reflect.DeepEqual(cfg, Default()) {
		t.Errorf("config.yaml and the built-in defaults disagree:\nconfig.yaml %v\nbuilt-in    %v", cfg, Default())
	}
}

func TestFileOverridesDefaults(t *testing.T) {
	path := writeConfig(t, `
server:
  addr: 127.0.0.1:9090
log:
  Level: debug          # keys are case-insensitive
stream:
  heartbeat: 5s
  retention: 1m30s
models:
  gpt:
    provider: openai
    base_url: https://api.openai.com/v1
    model: gpt-4o-mini
    temperature: 0.2
    retries: 0
    timeout: 20s
default_mode: RAG
pipelines:
  rag:
    - load_history
    - chat_completion_stream: {model: gpt}
plugins:
  chat_completion_stream:
    model: gpt
  search:
    top_k: 8
`)
	cfg := mustLoad(t, path)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if cfg.File != path {
		t.Errorf("File = %q, want %q", cfg.File, path)
	}
	if cfg.Server.Addr != "127.0.0.1:9090" || cfg.Log.Level != "debug" ||
		cfg.Stream.Heartbeat != 5*time.Second || cfg.Stream.Retention != 90*time.Second {
		t.Errorf("file values not applied: %v", cfg)
	}
	if cfg.Server.WriteTimeout != 30*time.Second || cfg.Log.Format != "json" || cfg.Stream.MaxEvents != 20000 {
		t.Errorf("keys the file leaves out lost their defaults: %v", cfg)
	}

	// models and pipelines are replaced as a whole.
	if _, ok := cfg.Models["default"]; ok || len(cfg.Models) != 1 {
		t.Errorf("models = %v, want only gpt (a file's models replace the built-in demo model)", cfg.Models)
	}
	gpt := cfg.Models["gpt"]
	if gpt.Provider != "openai" || gpt.Model != "gpt-4o-mini" || gpt.Timeout != 20*time.Second ||
		gpt.Temperature == nil || *gpt.Temperature != 0.2 || gpt.Retries == nil || *gpt.Retries != 0 {
		t.Errorf("models.gpt = %v", gpt)
	}
	if _, ok := cfg.Pipelines["chat"]; ok {
		t.Errorf("pipelines = %v, want only rag (a file's pipelines replace the built-in modes)", cfg.Pipelines)
	}
	if cfg.DefaultMode != "rag" {
		t.Errorf("default_mode = %q, want it lower-cased to match the pipelines keys", cfg.DefaultMode)
	}

	// plugins merge key by key.
	ccs := cfg.Plugins["chat_completion_stream"]
	if ccs["model"] != "gpt" || ccs["think_tags"] != true || ccs["system_prompt"] != DefaultSystemPrompt {
		t.Errorf("plugins.chat_completion_stream = %v, want model from the file and the other defaults kept", ccs)
	}
	if cfg.Plugins["search"]["top_k"] != 8 || cfg.Plugins["load_history"]["max_rounds"] != 5 {
		t.Errorf("plugins = %v", cfg.Plugins)
	}
}

func TestCommentOnlyFileMeansDefaults(t *testing.T) {
	cfg := mustLoad(t, writeConfig(t, "# nothing set yet\n"))
	cfg.File = ""
	if !reflect.DeepEqual(cfg, Default()) {
		t.Errorf("got %v, want the defaults", cfg)
	}
}

func TestEnvOverrides(t *testing.T) {
	cases := []struct {
		name  string
		file  string // "" runs with no config file
		env   map[string]string
		check func(t *testing.T, c *Config)
	}{
		{
			name: "server.addr without a file",
			env:  map[string]string{"CHATPIPE_SERVER_ADDR": "127.0.0.2:7000"},
			check: func(t *testing.T, c *Config) {
				if c.Server.Addr != "127.0.0.2:7000" {
					t.Errorf("server.addr = %q", c.Server.Addr)
				}
			},
		},
		{
			name: "server.addr over the file",
			file: "server: {addr: 127.0.0.1:1}\n",
			env:  map[string]string{"CHATPIPE_SERVER_ADDR": "localhost:7000"},
			check: func(t *testing.T, c *Config) {
				if c.Server.Addr != "localhost:7000" {
					t.Errorf("server.addr = %q", c.Server.Addr)
				}
			},
		},
		{
			name: "models.default.base_url and api_key absent from the file",
			file: "models:\n  default:\n    provider: openai\n    model: gpt-4o-mini\n",
			env: map[string]string{
				"CHATPIPE_MODELS_DEFAULT_BASE_URL": "http://localhost:8000/v1",
				"CHATPIPE_MODELS_DEFAULT_API_KEY":  "sk-from-env",
			},
			check: func(t *testing.T, c *Config) {
				m := c.Models["default"]
				if m.BaseURL != "http://localhost:8000/v1" || m.APIKey != "sk-from-env" || m.Model != "gpt-4o-mini" {
					t.Errorf("models.default = %+v", m)
				}
			},
		},
		{
			name: "models.default.api_key on the built-in model",
			env:  map[string]string{"CHATPIPE_MODELS_DEFAULT_API_KEY": "sk-from-env"},
			check: func(t *testing.T, c *Config) {
				if c.Models["default"].APIKey != "sk-from-env" || c.Models["default"].Provider != "demo" {
					t.Errorf("models.default = %+v", c.Models["default"])
				}
			},
		},
		{
			name: "storage.sqlite.path",
			file: "storage: {driver: sqlite}\n",
			env:  map[string]string{"CHATPIPE_STORAGE_SQLITE_PATH": "/var/lib/chatpipe/db"},
			check: func(t *testing.T, c *Config) {
				if c.Storage.SQLite.Path != "/var/lib/chatpipe/db" {
					t.Errorf("storage.sqlite.path = %q", c.Storage.SQLite.Path)
				}
			},
		},
		{
			name: "typed model fields from strings",
			file: "models:\n  default: {provider: demo}\n",
			env: map[string]string{
				"CHATPIPE_MODELS_DEFAULT_TEMPERATURE": "0.7",
				"CHATPIPE_MODELS_DEFAULT_RETRIES":     "4",
				"CHATPIPE_MODELS_DEFAULT_TIMEOUT":     "45s",
				"CHATPIPE_MODELS_DEFAULT_THINKING":    "true",
				"CHATPIPE_MODELS_DEFAULT_MAX_TOKENS":  "512",
			},
			check: func(t *testing.T, c *Config) {
				m := c.Models["default"]
				if m.Temperature == nil || *m.Temperature != 0.7 || m.Retries == nil || *m.Retries != 4 ||
					m.Timeout != 45*time.Second || !m.Thinking || m.MaxTokens != 512 {
					t.Errorf("models.default = %+v", m)
				}
			},
		},
		{
			name: "a model defined only in the environment",
			file: "models:\n  default: {provider: demo}\n",
			env: map[string]string{
				"CHATPIPE_MODELS_DEEP_SEEK_PROVIDER": "openai",
				"CHATPIPE_MODELS_DEEP_SEEK_BASE_URL": "https://api.deepseek.com/v1",
				"CHATPIPE_MODELS_DEEP_SEEK_API_KEY":  "sk-ds",
			},
			check: func(t *testing.T, c *Config) {
				m, ok := c.Models["deep_seek"]
				if !ok || m.Provider != "openai" || m.BaseURL != "https://api.deepseek.com/v1" || m.APIKey != "sk-ds" {
					t.Errorf("models = %v, want deep_seek from the environment", c.Models)
				}
				if _, ok := c.Models["default"]; !ok {
					t.Errorf("the file's model is gone: %v", c.Models)
				}
			},
		},
		{
			name: "a file model whose name has a dash",
			file: "models:\n  gpt-4o: {provider: openai}\n",
			env: map[string]string{
				"CHATPIPE_MODELS_GPT_4O_API_KEY":  "sk-4o",
				"CHATPIPE_MODELS_GPT_4O_PROVIDER": "ollama", // the file's model, not a new one
			},
			check: func(t *testing.T, c *Config) {
				if len(c.Models) != 1 || c.Models["gpt-4o"].APIKey != "sk-4o" || c.Models["gpt-4o"].Provider != "ollama" {
					t.Errorf("models = %v", c.Models)
				}
			},
		},
		{
			name: "plugin keys keep the file's types",
			file: "plugins:\n  search: {top_k: 5, hybrid: false, min_score: 0.5, sources: [docs]}\n",
			env: map[string]string{
				"CHATPIPE_PLUGINS_SEARCH_TOP_K":                         "12",
				"CHATPIPE_PLUGINS_SEARCH_HYBRID":                        "true",
				"CHATPIPE_PLUGINS_SEARCH_MIN_SCORE":                     "0.25",
				"CHATPIPE_PLUGINS_SEARCH_SOURCES":                       "docs, wiki",
				"CHATPIPE_PLUGINS_LOAD_HISTORY_MAX_ROUNDS":              "9",
				"CHATPIPE_PLUGINS_CHAT_COMPLETION_STREAM_SYSTEM_PROMPT": "Answer: briefly.",
			},
			check: func(t *testing.T, c *Config) {
				s := c.Plugins["search"]
				want := map[string]any{"top_k": 12, "hybrid": true, "min_score": 0.25, "sources": []any{"docs", "wiki"},
					"keyword_weight": 0.0, "vector_weight": 0.0, "rrf_k": 0} // the built-in keys merge in
				if !reflect.DeepEqual(s, want) {
					t.Errorf("plugins.search = %#v, want %#v", s, want)
				}
				if got := c.Plugins["load_history"]["max_rounds"]; got != 9 {
					t.Errorf("plugins.load_history.max_rounds = %#v, want the int 9", got)
				}
				if got := c.Plugins["chat_completion_stream"]["system_prompt"]; got != "Answer: briefly." {
					t.Errorf("system_prompt = %#v", got)
				}
			},
		},
		{
			name: "a pipeline as a comma-separated list",
			env:  map[string]string{"CHATPIPE_PIPELINES_CHAT": "load_history, chat_completion_stream"},
			check: func(t *testing.T, c *Config) {
				chain, err := c.Chain("chat")
				if err != nil || len(chain) != 2 || chain[0].Name != "load_history" || chain[1].Name != "chat_completion_stream" {
					t.Errorf("Chain(chat) = %v, %v", chain, err)
				}
			},
		},
		{
			name: "durations",
			env:  map[string]string{"CHATPIPE_STREAM_HEARTBEAT": "3s", "CHATPIPE_SERVER_SHUTDOWN_GRACE": "1m"},
			check: func(t *testing.T, c *Config) {
				if c.Stream.Heartbeat != 3*time.Second || c.Server.ShutdownGrace != time.Minute {
					t.Errorf("stream.heartbeat = %v, server.shutdown_grace = %v", c.Stream.Heartbeat, c.Server.ShutdownGrace)
				}
			},
		},
		{
			name: "an empty variable counts as unset",
			env:  map[string]string{"CHATPIPE_SERVER_ADDR": ""},
			check: func(t *testing.T, c *Config) {
				if c.Server.Addr != "127.0.0.1:8080" {
					t.Errorf("server.addr = %q", c.Server.Addr)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			path := ""
			if tc.file != "" {
				path = writeConfig(t, tc.file)
			} else {
				t.Chdir(t.TempDir())
			}
			c := mustLoad(t, path)
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			tc.check(t, c)
		})
	}
}

func TestEnvOverrideErrorsNameKeyAndVariable(t *testing.T) {
	cases := []struct {
		name, env, value, file, wantKey string
	}{
		{"bad duration", "CHATPIPE_STREAM_HEARTBEAT", "soon", "", "stream.heartbeat"},
		{"bad number", "CHATPIPE_LIMITS_MAX_TITLE_CHARS", "many", "", "limits.max_title_chars"},
		{"bad model field", "CHATPIPE_MODELS_DEFAULT_TEMPERATURE", "warm", "", "models.default.temperature"},
		{"bad plugin int", "CHATPIPE_PLUGINS_LOAD_HISTORY_MAX_ROUNDS", "many", "", "plugins.load_history.max_rounds"},
		{"bad plugin bool", "CHATPIPE_PLUGINS_CHAT_COMPLETION_STREAM_THINK_TAGS", "maybe", "", "plugins.chat_completion_stream.think_tags"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			t.Chdir(t.TempDir())
			_, err := Load("")
			if err == nil {
				t.Fatalf("Load accepted %s=%q", tc.env, tc.value)
			}
			if !strings.Contains(err.Error(), tc.wantKey) || !strings.Contains(err.Error(), tc.env) {
				t.Errorf("error %q should name %s and %s", err, tc.wantKey, tc.env)
			}
		})
	}
}

func TestLoadRejectsUnknownKeys(t *testing.T) {
	cases := []struct {
		name, file string
		wantKeys   []string
	}{
		{"top level", "serer:\n  addr: :1\n", []string{"serer"}},
		{"nested", "server:\n  adress: :1\n", []string{"server.adress"}},
		{"deeply nested", "storage:\n  sqlite:\n    pth: x.db\n", []string{"storage.sqlite.pth"}},
		{"model field", "models:\n  gpt:\n    provider: openai\n    tempreature: 0.1\n", []string{"models.gpt.tempreature"}},
		{"several at once", "serer: 1\nlog:\n  lvl: debug\nstream:\n  hartbeat: 1s\n",
			[]string{"log.lvl", "serer", "stream.hartbeat"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tc.file))
			if err == nil {
				t.Fatal("Load accepted an unknown key")
			}
			if got := errorKeys(err); !reflect.DeepEqual(got, tc.wantKeys) {
				t.Errorf("error keys = %v, want %v (error: %v)", got, tc.wantKeys, err)
			}
			for _, k := range tc.wantKeys {
				if !strings.Contains(err.Error(), k+": unknown key") {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
		})
	}
}

func TestFreeFormSectionsAcceptAnyKey(t *testing.T) {
	cfg := mustLoad(t, writeConfig(t, `
default_mode: chat
pipelines:
  chat:
    - load_history
    - my_filter: {words: [a, b], Mode: Strict}
plugins:
  my_filter:
    anything: {nested: true}
`))
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := cfg.Plugins["my_filter"]["anything"]; !reflect.DeepEqual(got, map[string]any{"nested": true}) {
		t.Errorf("plugins.my_filter.anything = %#v", got)
	}
}

func TestLoadRejectsMalformedFiles(t *testing.T) {
	cases := []struct {
		name, file string
		wantIs     error  // when set, errors.Is must hold
		wantInErr  string // substring of the message
	}{
		{"empty", "", ErrEmptyFile, "is empty"},
		{"blank", " \n\t\n", ErrEmptyFile, "is empty"},
		{"top level list", "- a\n- b\n", nil, "want a mapping of keys at the top level"},
		{"yaml syntax", "server:\n  addr: [\n", nil, "config.yaml"},
		{"section is a scalar", "server: 5\n", nil, "server: want a mapping of keys, got the number 5"},
		{"empty model", "models:\n  gpt:\n", nil, "models.gpt: want a mapping of keys"},
		{"plugin section is a scalar", "plugins:\n  search: 3\n", nil, "plugins.search: want a mapping of settings"},
		{"name with a dot", "models:\n  gpt.4: {provider: openai}\n", nil, `models: name "gpt.4" may not contain "."`},
		{"bare number duration", "stream:\n  heartbeat: 15\n", nil, `stream.heartbeat: want a duration with a unit, like "15s"`},
		{"bad duration", "stream:\n  retention: 5 parsecs\n", nil, `stream.retention: want a duration like "15s"`},
		{"bad int", "limits:\n  max_body_bytes: lots\n", nil, `limits.max_body_bytes: want a whole number, got the string "lots"`},
		{"bad model duration", "models:\n  gpt: {provider: openai, timeout: soon}\n", nil, "models.gpt.timeout: want a duration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tc.file))
			if err == nil {
				t.Fatal("Load accepted a malformed file")
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %v is not %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantInErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantInErr)
			}
		})
	}
}

func TestLoadErrorsDoNotEchoSecrets(t *testing.T) {
	// api_key indented one level too little: it becomes a model named api_key.
	_, err := Load(writeConfig(t, "models:\n  gpt:\n    provider: openai\n  api_key: sk-live-0123456789\n"))
	if err == nil || !strings.Contains(err.Error(), "models.api_key: want a mapping of keys, got a string") {
		t.Fatalf("error = %v, want it to name models.api_key", err)
	}
	if strings.Contains(err.Error(), "sk-live") {
		t.Errorf("error echoes the key: %v", err)
	}
}

func TestLoadDecodesDurations(t *testing.T) {
	cfg := mustLoad(t, writeConfig(t, `
server: {read_header_timeout: 1m30s}
stream: {heartbeat: 2s, max_duration: 1h}
models:
  d: {provider: demo, chunk_delay: 0, timeout: 750ms}
`))
	if cfg.Server.ReadHeaderTimeout != 90*time.Second || cfg.Stream.Heartbeat != 2*time.Second ||
		cfg.Stream.MaxDuration != time.Hour || cfg.Models["d"].ChunkDelay != 0 || cfg.Models["d"].Timeout != 750*time.Millisecond {
		t.Errorf("durations decoded wrong: %v", cfg)
	}
}

func TestEachLoadIsIndependent(t *testing.T) {
	a := mustLoad(t, writeConfig(t, "pipelines:\n  chat: [load_history, chat_completion_stream]\n"))
	a.Pipelines["chat"][0] = "mutated"
	a.Plugins["load_history"]["max_rounds"] = 99
	b := Default()
	if b.Pipelines["chat"][0] != "load_history" || b.Plugins["load_history"]["max_rounds"] != 5 {
		t.Errorf("snapshots share memory: %v", b)
	}
}
