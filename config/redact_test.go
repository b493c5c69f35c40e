package config

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func configWithSecrets() *Config {
	c := Default()
	c.Models["gpt"] = Model{Provider: "openai", APIKey: "sk-model-secret", BaseURL: "https://user:url-secret@llm.example/v1"}
	c.Plugins["rerank"] = map[string]any{
		"api_key":  "rk-plugin-secret",
		"top_n":    5,
		"auth":     map[string]any{"access_token": "tk-nested-secret"},
		"base_url": "https://api.example/rerank",
	}
	c.Pipelines["rag"] = []any{
		"load_history",
		map[string]any{"rerank": map[string]any{"client_secret": "cs-override-secret"}},
		"chat_completion_stream",
	}
	return c
}

var secrets = []string{"sk-model-secret", "url-secret", "rk-plugin-secret", "tk-nested-secret", "cs-override-secret"}

func TestPrintingAConfigNeverShowsSecrets(t *testing.T) {
	t.Parallel()
	c := configWithSecrets()

	core, logs := observer.New(zapcore.DebugLevel)
	zap.New(core).Info("config", zap.Any("config", c), zap.Any("model", c.Models["gpt"]), zap.Stringer("s", c))
	var logged strings.Builder
	for _, e := range logs.All() {
		fmt.Fprint(&logged, e.ContextMap())
	}

	outputs := map[string]string{
		"String":          c.String(),
		"%v of *Config":   fmt.Sprintf("%v", c),
		"%v of Models":    fmt.Sprintf("%v", c.Models),
		"%+v of Model":    fmt.Sprintf("%+v", c.Models["gpt"]),
		"%#v of Model":    fmt.Sprintf("%#v", c.Models["gpt"]),
		"Redacted fields": fmt.Sprint(c.Redacted().Plugins, c.Redacted().Pipelines, c.Redacted().Models["gpt"].APIKey),
		"zap":             logged.String(),
	}
	for name, out := range outputs {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s prints the secret %q: %s", name, s, out)
			}
		}
	}
	for _, want := range []string{`"api_key":"[redacted]"`, `"top_n":5`, `"base_url":"https://api.example/rerank"`, `"heartbeat":"15s"`} {
		if !strings.Contains(c.String(), want) {
			t.Errorf("String() lacks %s: %s", want, c.String())
		}
	}
	if !strings.Contains(c.String(), `"default":{"api_key":""`) {
		t.Errorf("an unset api_key should stay visibly empty: %s", c.String())
	}
}

func TestRedactedLeavesTheOriginalAlone(t *testing.T) {
	t.Parallel()
	c := configWithSecrets()
	_ = c.Redacted()
	if c.Models["gpt"].APIKey != "sk-model-secret" || c.Plugins["rerank"]["api_key"] != "rk-plugin-secret" ||
		c.Plugins["rerank"]["auth"].(map[string]any)["access_token"] != "tk-nested-secret" {
		t.Errorf("Redacted modified the original: %#v", c.Plugins["rerank"])
	}
}

func TestSecretNames(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"api_key": true, "apikey": true, "access_token": true, "client-secret": true, "password": true,
		"key": true, "max_tokens": false, "model": false, "top_k": false, "keywords": false, "token_budget": false,
	} {
		if got := isSecretName(name); got != want {
			t.Errorf("isSecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestRedactedHidesTheEmbeddingKey(t *testing.T) {
	c := Default()
	c.Knowledge.Embedding.APIKey = "sk-embed-secret"
	if s := c.String(); strings.Contains(s, "sk-embed-secret") {
		t.Fatalf("embedding key printed: %s", s)
	}
	if c.Knowledge.Embedding.APIKey != "sk-embed-secret" {
		t.Fatal("Redacted changed the original")
	}
}
