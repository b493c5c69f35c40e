package llm

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/model"

	"github.com/chatpipe/chatpipe/internal/providertest"
)

func ptr[T any](v T) *T { return &v }

func TestRegistryRejectsBadEntries(t *testing.T) {
	t.Parallel()
	openai := func(mod func(*ModelOptions)) ModelOptions {
		m := ModelOptions{Provider: "openai", BaseURL: "https://api.example.com/v1", Model: "gpt"}
		mod(&m)
		return m
	}
	cases := []struct {
		name  string
		model ModelOptions
		want  string
	}{
		{"unknown provider", ModelOptions{Provider: "fo"},
			`models.x.provider: unknown provider "fo" (known: demo, ollama, openai)`},
		{"misspelt provider", ModelOptions{Provider: " OLAMA"},
			`models.x.provider: unknown provider " OLAMA" (known: demo, ollama, openai; did you mean "ollama"?)`},
		{"missing provider", ModelOptions{}, `models.x.provider: required (want one of: demo, ollama, openai)`},
		{"openai without base_url", openai(func(m *ModelOptions) { m.BaseURL = "" }),
			"models.x.base_url: required for provider openai"},
		{"base_url not http", openai(func(m *ModelOptions) { m.BaseURL = "ftp://host/v1" }),
			"models.x.base_url: must start with http:// or https://"},
		{"base_url unparsable", openai(func(m *ModelOptions) { m.BaseURL = "http://user:p@ss word@/v1" }),
			"models.x.base_url: not a valid URL"},
		{"base_url is the endpoint", openai(func(m *ModelOptions) { m.BaseURL = "https://h/v1/chat/completions" }),
			"models.x.base_url: give the API root"},
		{"missing model", openai(func(m *ModelOptions) { m.Model = "" }), "models.x.model: required for provider openai"},
		{"bad client", openai(func(m *ModelOptions) { m.Client = "fast" }), `models.x.client: want lean or eino, got "fast"`},
		{"temperature too high", openai(func(m *ModelOptions) { m.Temperature = ptr(float32(2.5)) }),
			"models.x.temperature: must be between 0 and 2"},
		{"negative temperature", openai(func(m *ModelOptions) { m.Temperature = ptr(float32(-1)) }),
			"models.x.temperature: must be between 0 and 2"},
		{"negative max_tokens", openai(func(m *ModelOptions) { m.MaxTokens = -1 }), "models.x.max_tokens: must not be negative"},
		{"negative retries", openai(func(m *ModelOptions) { m.Retries = ptr(-1) }), "models.x.retries: must be between 0 and 10"},
		{"negative timeout", openai(func(m *ModelOptions) { m.Timeout = -time.Second }), "models.x.timeout: must not be negative"},
		{"too many stream attempts", openai(func(m *ModelOptions) { m.StreamAttempts = 9 }),
			"models.x.stream_retry.attempts: must be between 1 (off) and 5, got 9"},
		{"ollama without model", ModelOptions{Provider: "ollama"}, "models.x.model: required for provider ollama"},
		{"negative chunk_delay", ModelOptions{Provider: "demo", ChunkDelay: -1}, "models.x.chunk_delay: must not be negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewRegistry(map[string]ModelOptions{"x": c.model}, RegistryOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "p@ss") {
				t.Errorf("the error leaks the URL's password: %v", err)
			}
		})
	}
}

func TestRegistryBuildsModels(t *testing.T) {
	t.Parallel()
	srv := providertest.New(t)
	r, err := NewRegistry(map[string]ModelOptions{
		"demo": {Provider: "demo", ChunkDelay: time.Millisecond},
		"fast": {Provider: "openai", BaseURL: srv.BaseURL() + "/", Model: "m", Temperature: ptr(float32(0.7)), MaxTokens: 256},
		"eino": {Provider: "openai", Client: "eino", BaseURL: srv.BaseURL(), Model: "m", Retries: ptr(0),
			StreamAttempts: 1},
		"local": {Provider: "ollama", Model: "llama3", Thinking: true},
	}, RegistryOptions{HTTPClient: httpClient(t)})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); !reflect.DeepEqual(got, []string{"demo", "eino", "fast", "local"}) {
		t.Errorf("Names = %v", got)
	}

	fast, err := r.ChatModel("fast")
	if err != nil {
		t.Fatal(err)
	}
	if fast.Name != "fast" || fast.Provider != "openai" || fast.Retries != DefaultRetries ||
		fast.StreamAttempts != DefaultStreamAttempts || len(fast.Options) != 2 {
		t.Errorf("fast = %+v", fast)
	}
	if _, ok := fast.Model.(*OpenAI); !ok {
		t.Errorf("fast model is %T, want the lean *OpenAI", fast.Model)
	}
	o := model.GetCommonOptions(nil, fast.Options...)
	if o.Temperature == nil || *o.Temperature != 0.7 || o.MaxTokens == nil || *o.MaxTokens != 256 {
		t.Errorf("options = %+v", o)
	}
	if fast.Model.(*OpenAI).cfg.HeaderTimeout != DefaultHeaderTimeout {
		t.Errorf("header timeout = %v", fast.Model.(*OpenAI).cfg.HeaderTimeout)
	}
	// Copies: a caller appending options does not change the registry.
	fast.Options = append(fast.Options, model.WithModel("x"))
	if again, _ := r.ChatModel("fast"); len(again.Options) != 2 {
		t.Errorf("ChatModel returned shared options")
	}

	eino, _ := r.ChatModel("eino")
	if _, ok := eino.Model.(*einoOpenAI); !ok || eino.Retries != 0 || eino.StreamAttempts != 1 {
		t.Errorf("eino = %T retries %d", eino.Model, eino.Retries)
	}
	local, _ := r.ChatModel("local")
	if _, ok := local.Model.(*Ollama); !ok || local.Provider != "ollama" {
		t.Errorf("local = %T", local.Model)
	}
	demo, _ := r.ChatModel("demo")
	if d, ok := demo.Model.(*Demo); !ok || d.ChunkDelay != time.Millisecond {
		t.Errorf("demo = %T", demo.Model)
	}

	for _, name := range []string{"fast", "eino"} {
		m, _ := r.ChatModel(name)
		first, sr, _, err := StreamWithRetry(testContext(t), m, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if content, err := drain(first, sr); err != nil || content == "" {
			t.Errorf("%s: content %q err %v", name, content, err)
		}
	}
}

func TestRegistryUnknownModel(t *testing.T) {
	t.Parallel()
	r, err := NewRegistry(map[string]ModelOptions{"default": {Provider: "demo"}}, RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.ChatModel("gpt-9")
	if !errors.Is(err, ErrUnknownModel) || !strings.Contains(err.Error(), `"gpt-9"`) {
		t.Errorf("err = %v, want it to name the model", err)
	}
}

func TestModelOptionsPrintWithoutAPIKey(t *testing.T) {
	t.Parallel()
	m := ModelOptions{Provider: "openai", Model: "gpt", APIKey: "sk-very-secret"}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if got := fmt.Sprintf(format, m); strings.Contains(got, "sk-very-secret") || !strings.Contains(got, "gpt") {
			t.Errorf("Sprintf(%q) = %s", format, got)
		}
	}
	if got := fmt.Sprint(map[string]ModelOptions{"x": m}); strings.Contains(got, "sk-very-secret") {
		t.Errorf("a map of options prints the key: %s", got)
	}
}
