package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
)

// This file renders the chat-completions request of the lean client.

// Wire types of the request.
type (
	wireRequest struct {
		Model         string        `json:"model"`
		Messages      []wireMessage `json:"messages"`
		Stream        bool          `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Temperature *float32   `json:"temperature,omitempty"`
		TopP        *float32   `json:"top_p,omitempty"`
		MaxTokens   *int       `json:"max_tokens,omitempty"`
		Stop        []string   `json:"stop,omitempty"`
		Tools       []wireTool `json:"tools,omitempty"`
		ToolChoice  any        `json:"tool_choice,omitempty"`
	}
	wireMessage struct {
		Role       string         `json:"role"`
		Content    any            `json:"content"` // string, []wirePart, or nil (assistant tool calls)
		Name       string         `json:"name,omitempty"`
		ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
	}
	wirePart struct {
		Type     string        `json:"type"`
		Text     string        `json:"text,omitempty"`
		ImageURL *wireImageURL `json:"image_url,omitempty"`
	}
	wireImageURL struct {
		URL    string `json:"url"`
		Detail string `json:"detail,omitempty"`
	}
	wireToolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function wireFunction `json:"function"`
	}
	wireFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	wireTool struct {
		Type     string      `json:"type"`
		Function wireToolDef `json:"function"`
	}
	wireToolDef struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Parameters  any    `json:"parameters"`
	}
	wireNamedChoice struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
)

// requestBody renders the request JSON. Assistant reasoning is never sent
// back: reasoning APIs reject it and other APIs ignore it.
func (o *OpenAI) requestBody(in []*schema.Message, opts []model.Option) ([]byte, error) {
	maxTokens := &o.cfg.MaxTokens
	if o.cfg.MaxTokens <= 0 {
		maxTokens = nil
	}
	co := model.GetCommonOptions(&model.Options{
		Model: &o.cfg.Model, Temperature: o.cfg.Temperature, MaxTokens: maxTokens, Tools: o.tools,
	}, opts...)
	req := wireRequest{
		Model: o.cfg.Model, Stream: true, Temperature: co.Temperature, TopP: co.TopP, Stop: co.Stop,
		Messages: make([]wireMessage, 0, len(in)),
	}
	req.StreamOptions.IncludeUsage = true
	if co.Model != nil && *co.Model != "" {
		req.Model = *co.Model
	}
	if co.MaxTokens != nil && *co.MaxTokens > 0 {
		req.MaxTokens = co.MaxTokens
	}
	for _, m := range in {
		wm, err := toWireMessage(m)
		if err != nil {
			return nil, err
		}
		req.Messages = append(req.Messages, wm)
	}
	tools := allowedTools(co.Tools, co.AllowedToolNames)
	for _, t := range tools {
		wt, err := toWireTool(t)
		if err != nil {
			return nil, err
		}
		req.Tools = append(req.Tools, wt)
	}
	if len(req.Tools) > 0 && co.ToolChoice != nil {
		req.ToolChoice = toolChoice(*co.ToolChoice, req.Tools)
	}
	return json.Marshal(&req)
}

func toWireMessage(m *schema.Message) (wireMessage, error) {
	if m == nil {
		return wireMessage{}, errors.New("nil message")
	}
	wm := wireMessage{Role: string(m.Role), Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
	if m.Role == schema.Tool && wm.Name == "" {
		wm.Name = m.ToolName
	}
	if len(m.UserInputMultiContent) > 0 {
		parts, err := toWireParts(m.UserInputMultiContent)
		if err != nil {
			return wm, err
		}
		wm.Content = parts
	}
	for _, tc := range m.ToolCalls {
		typ, args := tc.Type, tc.Function.Arguments
		if typ == "" {
			typ = "function"
		}
		if args == "" {
			args = "{}"
		}
		wm.ToolCalls = append(wm.ToolCalls, wireToolCall{ID: tc.ID, Type: typ,
			Function: wireFunction{Name: tc.Function.Name, Arguments: args}})
	}
	if len(wm.ToolCalls) > 0 && m.Content == "" {
		wm.Content = nil // null, as OpenAI sends it
	}
	return wm, nil
}

func toWireParts(in []schema.MessageInputPart) ([]wirePart, error) {
	parts := make([]wirePart, 0, len(in))
	for _, p := range in {
		switch p.Type {
		case schema.ChatMessagePartTypeText:
			parts = append(parts, wirePart{Type: "text", Text: p.Text})
		case schema.ChatMessagePartTypeImageURL:
			if p.Image == nil {
				return nil, errors.New("image part without image")
			}
			var u string
			switch {
			case p.Image.URL != nil:
				u = *p.Image.URL
			case p.Image.Base64Data != nil:
				u = "data:" + p.Image.MIMEType + ";base64," + *p.Image.Base64Data
			default:
				return nil, errors.New("image part without URL or data")
			}
			parts = append(parts, wirePart{Type: "image_url", ImageURL: &wireImageURL{URL: u, Detail: string(p.Image.Detail)}})
		default:
			return nil, fmt.Errorf("unsupported message part type %q", p.Type)
		}
	}
	return parts, nil
}

func toWireTool(t *schema.ToolInfo) (wireTool, error) {
	var params any = map[string]any{"type": "object", "properties": map[string]any{}}
	if t.ParamsOneOf != nil {
		js, err := t.ParamsOneOf.ToJSONSchema()
		if err != nil {
			return wireTool{}, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		if js != nil {
			params = js
		}
	}
	return wireTool{Type: "function", Function: wireToolDef{Name: t.Name, Description: t.Desc, Parameters: params}}, nil
}

// allowedTools keeps the tools named in allowed (all when allowed is
// empty). Filtering the list works with every compatible server, unlike
// OpenAI's allowed_tools object.
func allowedTools(tools []*schema.ToolInfo, allowed []string) []*schema.ToolInfo {
	if len(allowed) == 0 {
		return tools
	}
	var out []*schema.ToolInfo
	for _, t := range tools {
		if slices.Contains(allowed, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// toolChoice maps eino's choice: Forbidden → "none", Allowed → "auto",
// Forced → the named function when exactly one tool is offered, else
// "required".
func toolChoice(tc schema.ToolChoice, tools []wireTool) any {
	switch tc {
	case schema.ToolChoiceForbidden:
		return "none"
	case schema.ToolChoiceForced:
		if len(tools) == 1 {
			var named wireNamedChoice
			named.Type = "function"
			named.Function.Name = tools[0].Function.Name
			return named
		}
		return "required"
	default:
		return "auto"
	}
}
