package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
)

// OpenAIConfig configures a client of an OpenAI-compatible chat-completions
// endpoint (OpenAI, vLLM, llama.cpp, Ollama's /v1, DeepSeek, OpenRouter…).
type OpenAIConfig struct {
	// BaseURL is the API root including /v1, e.g. https://api.openai.com/v1;
	// requests go to BaseURL + "/chat/completions".
	BaseURL string
	// APIKey is sent as a Bearer token; no Authorization header when empty.
	APIKey string
	// Model is the model id sent with each request (model.WithModel overrides it).
	Model string
	// Temperature and MaxTokens are request defaults; call options override them.
	Temperature *float32
	MaxTokens   int
	// HTTPClient sends the requests (nil = http.DefaultClient). Its Timeout
	// is ignored: a whole-request timeout would cut long streams.
	HTTPClient *http.Client
	// HeaderTimeout bounds connecting plus waiting for the response headers
	// (0 = no bound). It never limits the stream itself.
	HeaderTimeout time.Duration
}

// OpenAI is a lean client of the OpenAI chat-completions streaming API that
// implements eino's model.ToolCallingChatModel. It decodes only the fields
// chatpipe uses, so a streamed content delta costs about two allocations.
// An OpenAI value is immutable and safe for concurrent use.
type OpenAI struct {
	cfg      OpenAIConfig
	endpoint string
	host     string
	client   *http.Client
	header   http.Header
	tools    []*schema.ToolInfo
}

// NewOpenAI returns a client for cfg.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	base, err := checkBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("openai: base URL %w", err)
	}
	if cfg.Model == "" {
		return nil, errors.New("openai: model is required")
	}
	cfg.BaseURL = base
	o := &OpenAI{cfg: cfg, endpoint: base + "/chat/completions", host: hostOf(base), client: cfg.HTTPClient}
	if o.client == nil {
		o.client = http.DefaultClient
	}
	if o.client.Timeout != 0 { // a whole-request timeout would cut long streams
		c := *o.client
		c.Timeout = 0
		o.client = &c
	}
	o.header = http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"text/event-stream"},
		"User-Agent":   {"chatpipe"},
	}
	if cfg.APIKey != "" {
		o.header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	return o, nil
}

// checkBaseURL validates an http(s) base URL and returns it without a
// trailing slash.
func checkBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("not a valid URL: %w", redactedURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errors.New("must start with http:// or https://")
	}
	if u.Host == "" {
		return "", errors.New("has no host")
	}
	return strings.TrimRight(raw, "/"), nil
}

// redactedURLError drops the URL (which may hold credentials) from a
// url.Parse error.
func redactedURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// WithTools returns a copy of the client that offers tools to the model
// (none when tools is empty). The receiver is unchanged.
func (o *OpenAI) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	c := *o
	c.tools = slices.Clone(tools)
	return &c, nil
}

// Generate streams the answer and returns it merged into one message.
func (o *OpenAI) Generate(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	sr, err := o.Stream(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return collect(sr)
}

// collect reads sr to the end, closes it and merges the chunks. Usage is
// taken from the last chunk that has it, because ConcatMessages drops the
// reasoning-token detail.
func collect(sr *schema.StreamReader[*schema.Message]) (*schema.Message, error) {
	defer sr.Close()
	var msgs []*schema.Message
	var usage *schema.TokenUsage
	for {
		m, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if m.ResponseMeta != nil && m.ResponseMeta.Usage != nil {
			usage = m.ResponseMeta.Usage
		}
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 {
		return &schema.Message{Role: schema.Assistant}, nil
	}
	out, err := schema.ConcatMessages(msgs)
	if err != nil {
		return nil, err
	}
	if usage != nil {
		u := *usage
		if out.ResponseMeta == nil {
			out.ResponseMeta = &schema.ResponseMeta{}
		}
		out.ResponseMeta.Usage = &u
	}
	return out, nil
}

// Stream sends the request and returns the streamed answer. A rejected
// request or a failure to connect returns a *ProviderError; failures later
// arrive as a *ProviderError item in the stream. Cancelling ctx aborts the
// provider call. The caller must Close the reader; closing it stops the
// stream at the next chunk, cancelling ctx stops it at once.
func (o *OpenAI) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	body, err := o.requestBody(in, opts)
	if err != nil {
		return nil, fmt.Errorf("openai: build request: %w", err)
	}
	callCtx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(callCtx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		cancel(nil)
		return nil, fmt.Errorf("openai: %w", redactedURLError(err))
	}
	req.Header = o.header.Clone()
	resp, err := o.send(ctx, cancel, req)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel(nil)
		defer resp.Body.Close()
		errBody, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, statusError(resp.StatusCode, resp.Header, errBody, o.host)
	}
	sr, sw := schema.Pipe[*schema.Message](streamBuffer)
	p := &producer{ctx: ctx, cancel: cancel, body: resp.Body, sw: sw, host: o.host}
	if isJSON(resp.Header.Get("Content-Type")) {
		go p.runWhole() // a server that ignored stream:true
	} else {
		go p.run()
	}
	return sr, nil
}

// streamBuffer is how many chunks the producer may run ahead of the reader.
const streamBuffer = 8

// send performs the request. The header timeout cancels the call only
// until the response headers arrive.
func (o *OpenAI) send(ctx context.Context, cancel context.CancelCauseFunc, req *http.Request) (*http.Response, error) {
	var timer *time.Timer
	if o.cfg.HeaderTimeout > 0 {
		timer = time.AfterFunc(o.cfg.HeaderTimeout, func() { cancel(ErrHeaderTimeout) })
	}
	resp, err := o.client.Do(req)
	if timer != nil && !timer.Stop() { // fired: the call was cancelled for want of headers
		if err == nil {
			resp.Body.Close()
		}
		if ctx.Err() != nil {
			return nil, networkError(ctx, ctx.Err(), o.host)
		}
		return nil, &ProviderError{Host: o.host, Retryable: true, Err: ErrHeaderTimeout}
	}
	if err != nil {
		return nil, networkError(ctx, redactedURLError(err), o.host)
	}
	return resp, nil
}

func isJSON(contentType string) bool {
	return strings.HasPrefix(strings.TrimSpace(strings.ToLower(contentType)), "application/json")
}

var _ model.ToolCallingChatModel = (*OpenAI)(nil)
