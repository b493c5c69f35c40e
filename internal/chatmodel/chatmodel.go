// Package chatmodel names the chat models of config.yaml as the rest of
// chatpipe uses them: an eino model with the call options and retry bounds
// of its entry. internal/llm builds them; plugins, the run lifecycle and
// the evaluations ask a Source for them by name. It is a leaf (eino's
// model package only), so a model provider never imports the chain.
package chatmodel

import "github.com/cloudwego/eino/components/model"

// Model is a configured chat model: an eino model plus the call options
// its config entry sets (temperature, max tokens).
type Model struct {
	Name     string
	Provider string
	ModelID  string // the model the provider is asked for (models.<name>.model)
	Model    model.ToolCallingChatModel
	Options  []model.Option
	Retries  int // retries of a call that fails before its first chunk
	// StreamAttempts bounds the attempts of a call whose stream breaks
	// after partial output (models.<name>.stream_retry.attempts; 1 = no
	// mid-stream retry).
	StreamAttempts int
}

// Source resolves the chat models named in config.yaml.
type Source interface {
	ChatModel(name string) (*Model, error)
}
