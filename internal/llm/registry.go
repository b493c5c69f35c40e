package llm

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cloudwego/eino/components/model"

	"github.com/chatpipe/chatpipe/internal/chatmodel"
)

// Defaults of a model entry.
const (
	DefaultRetries       = 2
	DefaultHeaderTimeout = 60 * time.Second
	DefaultOllamaURL     = "http://localhost:11434"
	maxRetries           = 10
	// DefaultStreamAttempts is the attempts of a call whose stream breaks
	// after partial output, the first included.
	DefaultStreamAttempts = 2
	maxStreamAttempts     = 5
)

// ErrUnknownModel is returned (wrapped) by Registry.ChatModel for a name
// that config.yaml does not define.
var ErrUnknownModel = errors.New("chat model is not configured")

// ModelOptions are one named chat model (an entry of models: in
// config.yaml). NewRegistry validates them; its errors name the entry's
// keys. Fmt prints them without APIKey.
type ModelOptions struct {
	Provider string // demo | openai | ollama (any case)
	// BaseURL is the API root (…/v1): required for openai, optional for
	// ollama (DefaultOllamaURL), unused by demo.
	BaseURL string
	// Model is the provider's model id; required but for demo, whose id
	// defaults to the entry's name.
	Model       string
	APIKey      string   // openai: sent as a Bearer token
	Temperature *float32 // nil = the provider's default; 0..2
	MaxTokens   int      // 0 = the provider's default
	// Retries of a call that fails before its first chunk; nil =
	// DefaultRetries, at most 10.
	Retries *int
	// Timeout bounds connecting and the wait for response headers;
	// 0 = DefaultHeaderTimeout.
	Timeout    time.Duration
	Client     string        // openai only: lean ("" too) | eino
	Thinking   bool          // ollama only: ask the model to think
	ChunkDelay time.Duration // demo only: pause between streamed chunks
	// StreamAttempts bounds the attempts of a call whose stream breaks
	// after partial output, the first included (stream_retry.attempts):
	// 0 = DefaultStreamAttempts, 1 = no mid-stream retry.
	StreamAttempts int
}

// String prints the options with the API key masked.
func (m ModelOptions) String() string {
	if m.APIKey != "" {
		m.APIKey = "***"
	}
	type plain ModelOptions // without this method
	return fmt.Sprintf("%+v", plain(m))
}

// GoString is String, for %#v.
func (m ModelOptions) GoString() string { return "llm.ModelOptions" + m.String() }

// RegistryOptions are the registry's dependencies.
type RegistryOptions struct {
	// HTTPClient sends every provider request (nil = http.DefaultClient).
	// Its Timeout is ignored; each model's timeout bounds only connecting
	// and the wait for response headers.
	HTTPClient *http.Client
}

// Registry holds the chat models of one configuration, built and validated
// up front. It is immutable: a config reload builds a new Registry.
type Registry struct {
	models map[string]*chatmodel.Model
	names  []string
}

// NewRegistry validates and builds every entry of models. Errors name the
// config key at fault, e.g. `models.fast.base_url: required for provider openai`.
func NewRegistry(models map[string]ModelOptions, opts RegistryOptions) (*Registry, error) {
	r := &Registry{models: make(map[string]*chatmodel.Model, len(models))}
	for name := range models {
		r.names = append(r.names, name)
	}
	sort.Strings(r.names)
	for _, name := range r.names {
		cm, err := buildModel(name, models[name], opts)
		if err != nil {
			return nil, err
		}
		r.models[name] = cm
	}
	return r, nil
}

// ChatModel returns the named model. Each call returns a fresh copy, so a
// caller may append to its Options.
func (r *Registry) ChatModel(name string) (*chatmodel.Model, error) {
	cm, ok := r.models[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q (models: %s)", ErrUnknownModel, name, strings.Join(r.names, ", "))
	}
	c := *cm
	c.Options = slices.Clone(cm.Options)
	return &c, nil
}

// Names returns the configured model names, sorted.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

// buildModel validates one entry and builds its client.
func buildModel(name string, m ModelOptions, opts RegistryOptions) (*chatmodel.Model, error) {
	key := "models." + name
	if name == "" {
		return nil, fmt.Errorf("models: a model has an empty name")
	}
	provider := strings.ToLower(strings.TrimSpace(m.Provider))
	if provider == "" {
		return nil, fmt.Errorf("%s.provider: required (want one of: %s)", key, strings.Join(providers.Names(), ", "))
	}
	newClient, ok := providers.Lookup(provider)
	if !ok {
		unknown := providers.Unknown(provider)
		unknown.Name = m.Provider // as written
		return nil, fmt.Errorf("%s.provider: %w", key, unknown)
	}
	if err := checkCommon(key, provider, m); err != nil {
		return nil, err
	}
	retries := DefaultRetries
	if m.Retries != nil {
		retries = *m.Retries
	}
	timeout := m.Timeout
	if timeout == 0 {
		timeout = DefaultHeaderTimeout
	}
	cm := &chatmodel.Model{Name: name, Provider: provider, ModelID: cmp.Or(m.Model, name), Retries: retries,
		StreamAttempts: cmp.Or(m.StreamAttempts, DefaultStreamAttempts)}
	if m.Temperature != nil {
		cm.Options = append(cm.Options, model.WithTemperature(*m.Temperature))
	}
	if m.MaxTokens > 0 {
		cm.Options = append(cm.Options, model.WithMaxTokens(m.MaxTokens))
	}

	var err error
	cm.Model, err = newClient(m, clientOptions{HTTPClient: opts.HTTPClient, HeaderTimeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return cm, nil
}

// checkCommon validates an entry's fields. Knobs of another provider
// (client on ollama, thinking on openai) are ignored, not rejected, so
// defaults applied to every entry stay harmless.
func checkCommon(key, provider string, m ModelOptions) error {
	if provider != "demo" {
		if m.BaseURL == "" && provider == "openai" {
			return fmt.Errorf("%s.base_url: required for provider openai (e.g. https://api.openai.com/v1)", key)
		}
		if m.BaseURL != "" {
			if _, err := checkBaseURL(m.BaseURL); err != nil {
				return fmt.Errorf("%s.base_url: %v", key, err)
			}
			if strings.HasSuffix(strings.TrimRight(m.BaseURL, "/"), "/chat/completions") {
				return fmt.Errorf("%s.base_url: give the API root (…/v1), not the /chat/completions endpoint", key)
			}
		}
		if strings.TrimSpace(m.Model) == "" {
			return fmt.Errorf("%s.model: required for provider %s", key, provider)
		}
	}
	switch strings.ToLower(m.Client) {
	case "", "lean", "eino":
	default:
		return fmt.Errorf("%s.client: want lean or eino, got %q", key, m.Client)
	}
	if m.Temperature != nil && (*m.Temperature < 0 || *m.Temperature > 2) {
		return fmt.Errorf("%s.temperature: must be between 0 and 2, got %g", key, *m.Temperature)
	}
	if m.MaxTokens < 0 {
		return fmt.Errorf("%s.max_tokens: must not be negative", key)
	}
	if m.Retries != nil && (*m.Retries < 0 || *m.Retries > maxRetries) {
		return fmt.Errorf("%s.retries: must be between 0 and %d, got %d", key, maxRetries, *m.Retries)
	}
	if a := m.StreamAttempts; a < 0 || a > maxStreamAttempts {
		return fmt.Errorf("%s.stream_retry.attempts: must be between 1 (off) and %d, got %d", key, maxStreamAttempts, a)
	}
	if m.Timeout < 0 {
		return fmt.Errorf("%s.timeout: must not be negative", key)
	}
	if m.ChunkDelay < 0 {
		return fmt.Errorf("%s.chunk_delay: must not be negative", key)
	}
	return nil
}

var _ chatmodel.Source = (*Registry)(nil)
