package config

import (
	"slices"
	"testing"
)

func TestSecretsListsEveryConfiguredSecret(t *testing.T) {
	c := Default()
	c.Models = map[string]Model{
		"a": {Provider: "openai", APIKey: "model-key-1", BaseURL: "https://u:url-pass@x.example/v1?key=query-key"},
	}
	c.Knowledge.Embedding.APIKey = "embed-key"
	c.Redis.Password = "redis-pass"
	c.Postgres.DSN = "postgres://app:pg-pass@db/chatpipe"
	c.Auth.Keys = []AuthKey{{Tenant: "t", Key: "tenant-key"}}
	c.Plugins = map[string]map[string]any{
		"rerank": {"remote_api_key": "rerank-key", "top_n": 5},
		"mcp":    {"servers": []any{map[string]any{"headers": map[string]any{"X-Api-Key": "header-key", "Authorization": "Bearer bearer-token"}}}},
	}
	c.Pipelines = map[string][]any{"chat": {map[string]any{"rerank": map[string]any{"remote_api_key": "override-key"}}}}
	got := c.Secrets()
	for _, want := range []string{"model-key-1", "url-pass", "query-key", "embed-key", "redis-pass", "pg-pass",
		"tenant-key", "rerank-key", "header-key", "Bearer bearer-token", "bearer-token", "override-key"} {
		if !slices.Contains(got, want) {
			t.Errorf("Secrets() misses %q: %v", want, got)
		}
	}
	if slices.Contains(got, "5") {
		t.Errorf("Secrets() lists a setting that is not secret: %v", got)
	}
	kv := Default()
	kv.Postgres.DSN = "host=db user=app password='kv-pass' dbname=x"
	if !slices.Contains(kv.Secrets(), "kv-pass") {
		t.Errorf("key=value DSN password missing: %v", kv.Secrets())
	}
}
