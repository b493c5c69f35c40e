package config

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDefaultValidates(t *testing.T) {
	t.Parallel()
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		mutate  func(c *Config)
		wantKey string
		wantMsg string // optional extra substring
	}{
		{"addr without port", func(c *Config) { c.Server.Addr = "localhost" }, "server.addr", "host:port"},
		{"addr with bad port", func(c *Config) { c.Server.Addr = "localhost:http" }, "server.addr", "port"},
		{"addr port out of range", func(c *Config) { c.Server.Addr = ":70000" }, "server.addr", "port"},
		{"empty addr", func(c *Config) { c.Server.Addr = "" }, "server.addr", ""},
		{"negative lead weight", func(c *Config) { c.Knowledge.Search.LeadWeight = -0.3 }, "knowledge.search.lead_weight", "between 0 (off) and 10"},
		{"name weight too high", func(c *Config) { c.Knowledge.Search.NameWeight = 12 }, "knowledge.search.name_weight", "between 0 (off) and 10"},
		{"read header timeout zero", func(c *Config) { c.Server.ReadHeaderTimeout = 0 }, "server.read_header_timeout", "positive"},
		{"write timeout negative", func(c *Config) { c.Server.WriteTimeout = -time.Second }, "server.write_timeout", "positive"},
		{"shutdown grace zero", func(c *Config) { c.Server.ShutdownGrace = 0 }, "server.shutdown_grace", "positive"},
		{"heartbeat under a second", func(c *Config) { c.Stream.Heartbeat = 500 * time.Millisecond }, "stream.heartbeat", "at least 1s"},
		{"retention zero", func(c *Config) { c.Stream.Retention = 0 }, "stream.retention", ""},
		{"max duration zero", func(c *Config) { c.Stream.MaxDuration = 0 }, "stream.max_duration", ""},
		{"max events zero", func(c *Config) { c.Stream.MaxEvents = 0 }, "stream.max_events", "greater than 0"},
		{"max bytes zero", func(c *Config) { c.Stream.MaxBytes = 0 }, "stream.max_bytes", ""},
		{"max bytes over 1 GiB", func(c *Config) { c.Stream.MaxBytes = 2 << 30 }, "stream.max_bytes", "at most"},
		{"memory max bytes negative", func(c *Config) { c.Stream.MemoryMaxBytes = -1 }, "stream.memory_max_bytes", "sized to the machine"},
		{"memory max bytes under one stream", func(c *Config) { c.Stream.MemoryMaxBytes = 1024 }, "stream.memory_max_bytes", "at least stream.max_bytes"},
		{"partial save deltas negative", func(c *Config) { c.Stream.PartialSaveDeltas = -1 }, "stream.partial_save_deltas", "0 (off)"},
		{"partial save interval too short", func(c *Config) { c.Stream.PartialSaveInterval = time.Millisecond }, "stream.partial_save_interval", "at least 100ms"},
		{"max body bytes zero", func(c *Config) { c.Limits.MaxBodyBytes = 0 }, "limits.max_body_bytes", ""},
		{"max question chars zero", func(c *Config) { c.Limits.MaxQuestionChars = 0 }, "limits.max_question_chars", ""},
		{"max title chars negative", func(c *Config) { c.Limits.MaxTitleChars = -1 }, "limits.max_title_chars", ""},
		{"stream store not available", func(c *Config) { c.StreamStore = "kafka" }, "stream_store", "accepted: memory, redis"},
		{"storage driver not available", func(c *Config) { c.Storage.Driver = "mysql" }, "storage.driver", "accepted: sqlite, postgres"},
		{"postgres without a dsn", func(c *Config) { c.Storage.Driver = "postgres" }, "postgres.dsn", "required"},
		{"pgvector mode unknown", func(c *Config) {
			c.Storage.Driver, c.Postgres.DSN, c.Postgres.Pgvector = "postgres", "postgres://db/chat", "always"
		}, "postgres.pgvector", "accepted: auto, off"},
		{"hnsw ef_search out of range", func(c *Config) {
			c.Storage.Driver, c.Postgres.DSN, c.Postgres.HNSWEfSearch = "postgres", "postgres://db/chat", 5000
		}, "postgres.hnsw_ef_search", "between 1 and 1000"},
		{"redis with a bad address", func(c *Config) { c.StreamStore = "redis"; c.Redis.Addr = "nowhere" }, "redis.addr", ""},
		{"cors origin without scheme", func(c *Config) { c.CORS.AllowedOrigins = []string{"chat.example.com"} }, "cors.allowed_origins[0]", "origin"},
		{"sqlite path empty", func(c *Config) { c.Storage.SQLite.Path = " " }, "storage.sqlite.path", ""},
		{"log level", func(c *Config) { c.Log.Level = "verbose" }, "log.level", "accepted: debug, info, warn, error"},
		{"log format", func(c *Config) { c.Log.Format = "text" }, "log.format", "accepted: json, console"},
		{"no models", func(c *Config) { c.Models = nil }, "models", "at least one"},
		{"empty model name", func(c *Config) { c.Models[""] = Model{Provider: "demo"} }, "models", "empty name"},
		{"no pipelines", func(c *Config) { c.Pipelines = nil }, "pipelines", "at least one"},
		{"empty pipeline", func(c *Config) { c.Pipelines["chat"] = []any{} }, "pipelines.chat", "at least one plugin"},
		{"bad pipeline entry", func(c *Config) { c.Pipelines["chat"] = []any{"load_history", 7} }, "pipelines.chat[1]", entryShape},
		{"default mode missing", func(c *Config) { c.DefaultMode = "poetry" }, "default_mode", `"poetry" has no pipeline (pipelines: agent, chat, rag, research)`},
		{"default mode empty", func(c *Config) { c.DefaultMode = "" }, "default_mode", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			tc.mutate(c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			keys := errorKeys(err)
			if !slices.Contains(keys, tc.wantKey) {
				t.Errorf("error keys = %v, want %s (error: %v)", keys, tc.wantKey, err)
			}
			if !strings.Contains(err.Error(), tc.wantKey+": ") || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q should say %q about %s", err, tc.wantMsg, tc.wantKey)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Server.Addr = "nope"
	c.Auth.AllowOpen = true
	c.Log.Level = "loud"
	c.Stream.Heartbeat = 0
	got := errorKeys(c.Validate())
	want := []string{"server.addr", "stream.heartbeat", "log.level"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("error keys = %v, want %v", got, want)
	}
}

func TestChainParsesEntries(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Pipelines = map[string][]any{
		"rag": {
			"load_history",
			" Search ",
			map[string]any{"rerank": nil},
			map[string]any{"chat_completion_stream": map[string]any{"model": "fast", "think_tags": false}},
		},
	}
	got, err := c.Chain("RAG")
	if err != nil {
		t.Fatal(err)
	}
	want := []PipelineEntry{
		{Name: "load_history"},
		{Name: "search"},
		{Name: "rerank"},
		{Name: "chat_completion_stream", Overrides: map[string]any{"model": "fast", "think_tags": false}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Chain(rag) = %+v, want %+v", got, want)
	}
	all, err := c.Chains()
	if err != nil || !reflect.DeepEqual(all, map[string][]PipelineEntry{"rag": want}) {
		t.Errorf("Chains() = %+v, %v", all, err)
	}
}

func TestChainFromYAMLWithOverrides(t *testing.T) {
	cfg := mustLoad(t, writeConfig(t, `
default_mode: rag
pipelines:
  rag:
    - load_history
    - Chat_Completion_Stream:
        Model: default
        System_Prompt: Answer in French.
`))
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	chain, err := cfg.Chain("rag")
	if err != nil {
		t.Fatal(err)
	}
	want := []PipelineEntry{
		{Name: "load_history"},
		{Name: "chat_completion_stream", Overrides: map[string]any{"model": "default", "system_prompt": "Answer in French."}},
	}
	if !reflect.DeepEqual(chain, want) {
		t.Errorf("Chain(rag) = %+v, want %+v", chain, want)
	}
}

func TestChainRejectsBadEntries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		entry   any
		wantMsg string
	}{
		{"number", 7, entryShape + ", got the number 7"},
		{"list", []any{"a"}, entryShape + ", got a list of 1"},
		{"empty name", "  ", "empty plugin name"},
		{"map with two keys", map[string]any{"a": nil, "b": nil}, entryShape + ", got a mapping with 2 keys (a, b)"},
		{"settings not a map", map[string]any{"search": "fast"}, entryShape + `, got the string "fast" for search's settings`},
		{"settings a list", map[string]any{"search": []any{1}}, entryShape},
		{"empty map", map[string]any{}, entryShape},
		{"null", nil, entryShape + ", got nothing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			c.Pipelines["chat"] = []any{"load_history", tc.entry}
			_, err := c.Chain("chat")
			if err == nil {
				t.Fatal("Chain accepted it")
			}
			if keys := errorKeys(err); !reflect.DeepEqual(keys, []string{"pipelines.chat[1]"}) {
				t.Errorf("error keys = %v, want [pipelines.chat[1]]", keys)
			}
			if want := "pipelines.chat[1]: " + tc.wantMsg; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
			if _, err := c.Chains(); err == nil || !strings.Contains(err.Error(), "pipelines.chat[1]") {
				t.Errorf("Chains() error = %v", err)
			}
		})
	}
}

func TestChainUnknownMode(t *testing.T) {
	t.Parallel()
	_, err := Default().Chain("poetry")
	if !errors.Is(err, ErrUnknownMode) {
		t.Fatalf("error %v is not ErrUnknownMode", err)
	}
	if want := "pipelines.poetry: no such chat mode (modes: agent, chat, rag, research)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}
