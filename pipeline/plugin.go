// Package pipeline runs a chat mode's plugins as a chain of responsibility:
// each plugin does its part of a request and calls next() to hand on, can
// work before and after next(), and short-circuits by returning without it.
//
// The package imports no plugin: plugins register themselves by name (see
// Register) and are arranged per chat mode in config.yaml. It holds the
// chain only: the contracts it shares with services (chat models,
// retrieval, a session's earlier turns, the cache, approvals, remote tools)
// live in leaf packages under internal, which the services import instead
// of the chain.
package pipeline

import (
	"context"
	"errors"
	"fmt"
)

// EventType is a pipeline stage a plugin handles. Stage events on the wire
// carry the same name.
type EventType string

// The built-in stages, in the order the rag mode runs them.
const (
	StageLoadHistory EventType = "load_history"
	StageRewrite     EventType = "rewrite"
	StageSearch      EventType = "search"
	StageRerank      EventType = "rerank"
	StageMerge       EventType = "merge"
	// StageGenerate produces the answer; every chain needs one plugin that
	// handles it.
	StageGenerate EventType = "generate"
)

// Plugin is one link of a chain. Plugins are shared by every request of a
// configuration snapshot, so OnEvent must be safe for concurrent use; all
// per-request state lives in ChatManage.
type Plugin interface {
	// Name is the name used in config.yaml.
	Name() string
	// Events lists the stages the plugin handles, in the order it runs them.
	Events() []EventType
	// OnEvent does the plugin's part of stage evt and calls next() to run
	// the rest of the chain (or returns without it to short-circuit).
	OnEvent(ctx context.Context, evt EventType, cm *ChatManage, next func() *PluginError) *PluginError
}

// Error codes carried by PluginError and the error event.
const (
	CodeCanceled      = "canceled"
	CodeInternal      = "internal_error"
	CodeProvider      = "provider_error"
	CodeRateLimited   = "rate_limited"
	CodeTimeout       = "timeout"
	CodeBadRequest    = "bad_request"
	CodeNotConfigured = "not_configured"
)

// PluginError is the error a plugin returns to end a request. Message is
// shown to the user: it must be readable and never carry a secret; the
// cause stays in Err for logs.
type PluginError struct {
	Plugin    string    // the plugin that failed
	Stage     EventType // the stage it was running
	Code      string    // machine-readable, e.g. provider_error
	Message   string    // for the user
	Retryable bool      // whether asking again may work
	Err       error     // the cause, for logs and errors.Is
}

// Error implements error.
func (e *PluginError) Error() string {
	msg := e.Message
	if e.Err != nil {
		msg = fmt.Sprintf("%s: %v", msg, e.Err)
	}
	if e.Plugin != "" {
		return fmt.Sprintf("plugin %s (%s): %s", e.Plugin, e.Code, msg)
	}
	return fmt.Sprintf("%s: %s", e.Code, msg)
}

// Unwrap exposes the cause to errors.Is and errors.As.
func (e *PluginError) Unwrap() error { return e.Err }

// Errorf builds a PluginError with a user message and a cause.
func Errorf(code string, cause error, format string, args ...any) *PluginError {
	return &PluginError{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

// Canceled reports ctx's end as a PluginError, or nil if ctx is live.
func Canceled(ctx context.Context) *PluginError {
	if ctx.Err() == nil {
		return nil
	}
	return &PluginError{Code: CodeCanceled, Message: "The request was cancelled.", Err: context.Cause(ctx)}
}

// ErrNextCalledTwice is the cause when a plugin calls next() more than once.
var ErrNextCalledTwice = errors.New("next() called more than once")
