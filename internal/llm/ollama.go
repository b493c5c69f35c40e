package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	einoollama "github.com/cloudwego/eino-ext/components/model/ollama"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/ollama/api"
)

// OllamaConfig configures a client of Ollama's native /api/chat.
type OllamaConfig struct {
	BaseURL     string // e.g. http://localhost:11434 (no /v1, no /api)
	Model       string
	Thinking    bool     // send "think": true (the thinking streams as ReasoningContent); false = the model's default
	Temperature *float32 // nil = the model's default (Ollama cannot be sent an explicit 0)
	MaxTokens   int      // → options.num_predict (Ollama ignores model.WithMaxTokens)
	HTTPClient  *http.Client
	// HeaderTimeout bounds connecting plus waiting for the response headers,
	// which Ollama sends once the model is loaded (0 = no bound).
	HeaderTimeout time.Duration
}

// Ollama wraps eino-ext's native Ollama component. Unlike the component
// itself, closing the reader stops the generation: the wrapper cancels the
// call's context. Callers should still cancel ctx when they give up — it is
// the only thing that stops a request the reader is no longer pulling.
// Errors become *ProviderError; a stream that ends without Ollama's final
// "done" line is reported as truncated.
type Ollama struct {
	cm   model.ToolCallingChatModel
	host string
}

// NewOllama returns a client for cfg.
func NewOllama(cfg OllamaConfig) (*Ollama, error) {
	base, err := checkBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("ollama: base URL %w", err)
	}
	if cfg.Model == "" {
		return nil, errors.New("ollama: model is required")
	}
	opts := &api.Options{NumPredict: cfg.MaxTokens}
	if cfg.Temperature != nil {
		opts.Temperature = *cfg.Temperature
	}
	conf := &einoollama.ChatModelConfig{
		BaseURL:    base,
		Model:      cfg.Model,
		HTTPClient: libraryClient(cfg.HTTPClient, cfg.HeaderTimeout),
		Options:    opts,
	}
	if cfg.Thinking {
		conf.Thinking = &api.ThinkValue{Value: true}
	}
	cm, err := einoollama.NewChatModel(context.Background(), conf)
	if err != nil {
		return nil, fmt.Errorf("ollama: %w", err)
	}
	return &Ollama{cm: cm, host: hostOf(base)}, nil
}

// WithTools returns a copy that offers tools. Ollama sends each tool call
// whole, without ID; the stream gives them IDs call_1, call_2, ….
func (o *Ollama) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	if len(tools) == 0 {
		return o, nil
	}
	cm, err := o.cm.WithTools(tools)
	if err != nil {
		return nil, err
	}
	return &Ollama{cm: cm, host: o.host}, nil
}

// Generate streams the answer and merges it into one message.
func (o *Ollama) Generate(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	sr, err := o.Stream(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return collect(sr)
}

// Stream starts the call. The component reports even HTTP errors inside
// the stream, so a rejected request arrives as the first item.
func (o *Ollama) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	callCtx, cancel := context.WithCancel(ctx)
	callCtx, info := withResponseInfo(callCtx)
	inner, err := o.cm.Stream(callCtx, in, opts...)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("ollama: %w", err)
	}
	sr, sw := schema.Pipe[*schema.Message](streamBuffer)
	go o.forward(ctx, cancel, inner, sw, info)
	return sr, nil
}

// forward copies the component's stream into ours, normalising chunks and
// errors. When our reader is closed it cancels the call, which is what
// makes the component stop.
func (o *Ollama) forward(ctx context.Context, cancel context.CancelFunc, inner *schema.StreamReader[*schema.Message],
	sw *schema.StreamWriter[*schema.Message], info *responseInfo) {
	defer sw.Close()
	defer inner.Close()
	defer cancel()
	var done, streamed bool
	calls := 0
	for {
		m, err := inner.Recv()
		if errors.Is(err, io.EOF) {
			if !done {
				sw.Send(nil, o.endError(ctx, streamed, info))
			}
			return
		}
		if err != nil {
			sw.Send(nil, o.convert(ctx, err, streamed, info))
			return
		}
		c := *m // a copy: the component's callbacks may hold the original
		m = &c
		m.Role = schema.Assistant
		if rm := m.ResponseMeta; rm != nil {
			if rm.FinishReason != "" || (rm.Usage != nil && rm.Usage.TotalTokens > 0) {
				done = true
			} else {
				m.ResponseMeta = nil
			}
		}
		if len(m.ToolCalls) > 0 {
			m.ToolCalls = slices.Clone(m.ToolCalls)
		}
		for i := range m.ToolCalls {
			if m.ToolCalls[i].ID == "" {
				calls++
				m.ToolCalls[i].ID = "call_" + strconv.Itoa(calls)
			}
		}
		hasDelta := m.Content != "" || m.ReasoningContent != "" || len(m.ToolCalls) > 0
		if !hasDelta && m.ResponseMeta == nil {
			continue
		}
		streamed = streamed || hasDelta
		if sw.Send(m, nil) {
			return
		}
	}
}

// endError explains a stream that ended without the final "done" line:
// an HTTP error with an empty body, or a broken connection.
func (o *Ollama) endError(ctx context.Context, streamed bool, info *responseInfo) error {
	if status, h := info.get(); status != 0 && status != http.StatusOK {
		return statusError(status, h, nil, o.host)
	}
	return truncatedError(ctx, io.ErrUnexpectedEOF, streamed, o.host)
}

// convert maps the errors of the component's API client.
func (o *Ollama) convert(ctx context.Context, err error, streamed bool, info *responseInfo) error {
	if ctx.Err() != nil {
		return &ProviderError{Host: o.host, Err: context.Cause(ctx)}
	}
	var se api.StatusError
	if errors.As(err, &se) {
		_, h := info.get()
		pe := statusError(se.StatusCode, h, nil, o.host)
		pe.Message = truncateMessage(se.ErrorMessage)
		return pe
	}
	var ae api.AuthorizationError
	if errors.As(err, &ae) {
		return &ProviderError{StatusCode: ae.StatusCode, Host: o.host}
	}
	if status, h := info.get(); status != 0 && status != http.StatusOK {
		return statusError(status, h, nil, o.host) // an error body the client could not parse
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if streamed {
			return truncatedError(ctx, redactedURLError(err), true, o.host)
		}
		return networkError(ctx, redactedURLError(err), o.host)
	}
	if isNetError(err) || errors.Is(err, io.ErrUnexpectedEOF) {
		return truncatedError(ctx, err, streamed, o.host)
	}
	// An {"error": "..."} line in the stream arrives as a plain error.
	return streamError(err.Error(), "", "", o.host)
}

var _ model.ToolCallingChatModel = (*Ollama)(nil)
