package llm

import (
	"net/http"
	"strings"
	"time"

	"github.com/cloudwego/eino/components/model"

	"github.com/chatpipe/chatpipe/internal/registry"
)

// providerFactory builds the client of one model entry, already checked
// by checkCommon.
type providerFactory func(m ModelOptions, opts clientOptions) (model.ToolCallingChatModel, error)

// clientOptions are what every provider's client is built with besides
// its entry.
type clientOptions struct {
	HTTPClient    *http.Client  // sends the requests (nil = http.DefaultClient)
	HeaderTimeout time.Duration // bounds connecting and the wait for response headers
}

// providers are the model providers, by the value of `models.<name>.provider`.
// Add one by writing its eino ToolCallingChatModel in this package and
// registering its factory here.
var providers = registry.New[providerFactory]("provider")

func init() {
	providers.Register("demo", newDemoProvider)
	providers.Register("openai", newOpenAIProvider)
	providers.Register("ollama", newOllamaProvider)
}

// newDemoProvider is the offline demo model; it takes no endpoint.
func newDemoProvider(m ModelOptions, _ clientOptions) (model.ToolCallingChatModel, error) {
	return NewDemo(m.ChunkDelay), nil
}

// newOpenAIProvider is an OpenAI-compatible endpoint, through our lean
// client or, with `client: eino`, through eino-ext's.
func newOpenAIProvider(m ModelOptions, opts clientOptions) (model.ToolCallingChatModel, error) {
	oc := OpenAIConfig{BaseURL: m.BaseURL, APIKey: m.APIKey, Model: m.Model, Temperature: m.Temperature,
		MaxTokens: m.MaxTokens, HTTPClient: opts.HTTPClient, HeaderTimeout: opts.HeaderTimeout}
	if strings.EqualFold(m.Client, "eino") {
		return NewEinoOpenAI(oc)
	}
	c, err := NewOpenAI(oc)
	if err != nil {
		return nil, err // not a nil *OpenAI in a non-nil interface
	}
	return c, nil
}

// newOllamaProvider is Ollama's native API, at DefaultOllamaURL unless
// base_url says otherwise.
func newOllamaProvider(m ModelOptions, opts clientOptions) (model.ToolCallingChatModel, error) {
	base := m.BaseURL
	if base == "" {
		base = DefaultOllamaURL
	}
	c, err := NewOllama(OllamaConfig{BaseURL: base, Model: m.Model, Thinking: m.Thinking,
		Temperature: m.Temperature, MaxTokens: m.MaxTokens, HTTPClient: opts.HTTPClient, HeaderTimeout: opts.HeaderTimeout})
	if err != nil {
		return nil, err
	}
	return c, nil
}
