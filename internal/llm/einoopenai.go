package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	goopenai "github.com/meguminnnnnnnnn/go-openai"
)

// einoOpenAI wraps eino-ext's OpenAI component (operators choose it with
// `client: eino`) so that it behaves like the lean client where it
// matters: errors become *ProviderError, a stream that ends without a
// finish reason is reported as truncated, and assistant reasoning is not
// sent back to the provider.
type einoOpenAI struct {
	cm    model.ToolCallingChatModel // with the bound tools
	plain model.ToolCallingChatModel // without tools
	host  string
}

// NewEinoOpenAI returns eino-ext's OpenAI-compatible client configured from
// cfg. Its HTTP timeout is 0; cfg.HeaderTimeout becomes the transport's
// ResponseHeaderTimeout, so long streams are never cut.
func NewEinoOpenAI(cfg OpenAIConfig) (model.ToolCallingChatModel, error) {
	base, err := checkBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("openai (eino): base URL %w", err)
	}
	if cfg.Model == "" {
		return nil, errors.New("openai (eino): model is required")
	}
	var maxTokens *int
	if cfg.MaxTokens > 0 {
		maxTokens = &cfg.MaxTokens
	}
	cm, err := einoopenai.NewChatModel(context.Background(), &einoopenai.ChatModelConfig{
		APIKey:      cfg.APIKey,
		BaseURL:     base,
		Model:       cfg.Model,
		Temperature: cfg.Temperature,
		MaxTokens:   maxTokens,
		Timeout:     0,
		HTTPClient:  libraryClient(cfg.HTTPClient, cfg.HeaderTimeout),
	})
	if err != nil {
		return nil, fmt.Errorf("openai (eino): %w", err)
	}
	return &einoOpenAI{cm: cm, plain: cm, host: hostOf(base)}, nil
}

// WithTools returns a copy that offers tools (none when tools is empty).
func (e *einoOpenAI) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	if len(tools) == 0 {
		return &einoOpenAI{cm: e.plain, plain: e.plain, host: e.host}, nil
	}
	cm, err := e.plain.WithTools(tools)
	if err != nil {
		return nil, err
	}
	return &einoOpenAI{cm: cm, plain: e.plain, host: e.host}, nil
}

// Generate streams the answer and merges it into one message.
func (e *einoOpenAI) Generate(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	sr, err := e.Stream(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return collect(sr)
}

// truncatedKey marks the message the end-of-stream hook returns when no
// finish reason arrived; the converter turns it into an error item.
const truncatedKey = "chatpipe_truncated"

// Stream starts the call. Failures before streaming return a
// *ProviderError, later ones arrive as *ProviderError items.
func (e *einoOpenAI) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	callCtx, info := withResponseInfo(ctx)
	info.sniffReasoning = true
	var finished bool // written only by the component's producer goroutine
	watch := einoopenai.WithResponseChunkMessageModifier(
		func(_ context.Context, msg *schema.Message, _ []byte, end bool) (*schema.Message, error) {
			if msg != nil && msg.ResponseMeta != nil && msg.ResponseMeta.FinishReason != "" {
				finished = true
			}
			if end && !finished {
				if msg == nil {
					msg = &schema.Message{Role: schema.Assistant}
				}
				msg.Extra = map[string]any{truncatedKey: true}
			}
			return msg, nil
		})
	sr, err := e.cm.Stream(callCtx, withoutReasoning(in), append(opts[:len(opts):len(opts)], watch)...)
	if err != nil {
		return nil, e.startError(ctx, err, info)
	}
	var streamed bool // read and written only by the reader's goroutine
	return schema.StreamReaderWithConvert(sr,
		func(m *schema.Message) (*schema.Message, error) {
			if m.Extra[truncatedKey] == true {
				return nil, truncatedError(ctx, io.ErrUnexpectedEOF, streamed, e.host)
			}
			if m.Content != "" || m.ReasoningContent != "" || len(m.ToolCalls) > 0 {
				streamed = true
			}
			if rm := m.ResponseMeta; rm != nil && rm.Usage != nil && rm.Usage.CompletionTokensDetails.ReasoningTokens == 0 {
				if n := info.getReasoningTokens(); n > 0 { // restore what the component's merge dropped
					u, meta := *rm.Usage, *rm
					u.CompletionTokensDetails.ReasoningTokens = n
					meta.Usage = &u
					c := *m
					c.ResponseMeta = &meta
					m = &c
				}
			}
			return m, nil
		},
		schema.WithErrWrapper(func(err error) error { return e.readError(ctx, err, streamed) }),
	), nil
}

// startError converts an error of the request itself.
func (e *einoOpenAI) startError(ctx context.Context, err error, info *responseInfo) error {
	if ctx.Err() != nil {
		return &ProviderError{Host: e.host, Err: context.Cause(ctx)}
	}
	if pe := e.apiError(err); pe != nil {
		pe.RetryAfter = info.retryAfter()
		return pe
	}
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) {
		return networkError(ctx, redactedURLError(err), e.host)
	}
	return fmt.Errorf("openai (eino): %w", err) // building the request failed
}

// readError converts an error item of the stream.
func (e *einoOpenAI) readError(ctx context.Context, err error, streamed bool) error {
	if ctx.Err() != nil {
		return &ProviderError{Host: e.host, Err: context.Cause(ctx)}
	}
	if pe := e.apiError(err); pe != nil {
		return pe
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || isNetError(err) {
		return truncatedError(ctx, io.ErrUnexpectedEOF, streamed, e.host)
	}
	return &ProviderError{Host: e.host, Message: "the provider sent a malformed stream", Malformed: true, Err: err}
}

// apiError converts the error types of eino-ext and its go-openai fork.
func (e *einoOpenAI) apiError(err error) *ProviderError {
	var ae *einoopenai.APIError
	if errors.As(err, &ae) {
		return e.fromAPIError(ae.HTTPStatusCode, ae.Message, ae.Type, ae.Code)
	}
	var oe *goopenai.APIError
	if errors.As(err, &oe) {
		return e.fromAPIError(oe.HTTPStatusCode, oe.Message, oe.Type, oe.Code)
	}
	var re *goopenai.RequestError
	if errors.As(err, &re) && re.HTTPStatusCode != 0 {
		return statusError(re.HTTPStatusCode, nil, re.Body, e.host)
	}
	return nil
}

func (e *einoOpenAI) fromAPIError(status int, message, typ string, code any) *ProviderError {
	codeText := ""
	if code != nil {
		codeText = fmt.Sprint(code)
	}
	if status == 0 {
		return streamError(message, typ, codeText, e.host)
	}
	pe := &ProviderError{StatusCode: status, Type: typ, Code: codeText, Message: truncateMessage(message),
		Host: e.host, Retryable: retryableStatus(status)}
	if codeText == "insufficient_quota" {
		pe.Retryable = false
	}
	return pe
}

func isNetError(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe)
}

// withoutReasoning returns in with the assistant reasoning removed
// (shallow copies; the caller's messages are not modified).
func withoutReasoning(in []*schema.Message) []*schema.Message {
	var out []*schema.Message
	for i, m := range in {
		if m == nil || m.ReasoningContent == "" {
			continue
		}
		if out == nil {
			out = append([]*schema.Message(nil), in...)
		}
		c := *m
		c.ReasoningContent = ""
		out[i] = &c
	}
	if out == nil {
		return in
	}
	return out
}

var _ model.ToolCallingChatModel = (*einoOpenAI)(nil)
