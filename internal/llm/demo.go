package llm

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
)

// Demo is the offline model chatpipe starts with: deterministic, no
// network, no API key. It streams a short thinking and an answer that says
// plainly it is a demo and how to configure a real model. Given a prompt
// with numbered context passages (citation.FormatContext), it answers
// extractively instead: it quotes the passages' sentences that best match
// the question, with their [n] citation numbers.
type Demo struct {
	// ChunkDelay paces the stream so it can be watched (0 = as fast as possible).
	ChunkDelay time.Duration
}

// NewDemo returns the demo model.
func NewDemo(chunkDelay time.Duration) *Demo { return &Demo{ChunkDelay: chunkDelay} }

const demoAnswer = `[demo model] This answer comes from chatpipe's built-in offline demo model, not from a real LLM. ` +
	`It shows the stream a frontend receives: thinking, then the answer, then the end of the stream. ` +
	`To get real answers, point a model entry in config.yaml at an OpenAI-compatible endpoint ` +
	`(provider: openai, base_url such as https://api.openai.com/v1 or http://localhost:11434/v1, model, api_key) ` +
	`or at native Ollama (provider: ollama), or set CHATPIPE_MODELS_DEFAULT_PROVIDER, CHATPIPE_MODELS_DEFAULT_BASE_URL, ` +
	`CHATPIPE_MODELS_DEFAULT_MODEL and CHATPIPE_MODELS_DEFAULT_API_KEY.`

// DemoReply returns the thinking and answer the demo gives to question q.
func DemoReply(q string) (thinking, answer string) {
	q = strings.TrimSpace(q)
	if utf8.RuneCountInString(q) > 80 {
		q = string([]rune(q)[:80]) + "…"
	}
	thinking = "The user asked: \"" + q + "\". I am the offline demo model, so I cannot really answer; " +
		"I will explain what I am and how to connect a real model."
	return thinking, demoAnswer
}

// demoReply is the demo's reply to a prompt and the pieces to stream it
// in: extractive when the prompt carries numbered context, the canned
// demo answer otherwise.
func demoReply(prompt string) (thinking, answer string, split func(string) []string) {
	if th, ans, ok := extractiveReply(prompt); ok {
		return th, ans, splitForStream
	}
	th, ans := DemoReply(prompt)
	return th, ans, splitWords
}

// Generate returns the whole reply at once.
func (d *Demo) Generate(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	th, ans, _ := demoReply(lastUserText(in))
	msg := schema.AssistantMessage(ans, nil)
	msg.ReasoningContent = th
	return msg, ctx.Err()
}

// Stream streams the reply word by word: reasoning first, then content,
// then a usage chunk. It stops as soon as ctx ends or the reader closes.
func (d *Demo) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	th, ans, split := demoReply(lastUserText(in))
	sr, sw := schema.Pipe[*schema.Message](1)
	go func() {
		defer sw.Close()
		var timer *time.Timer
		if d.ChunkDelay > 0 {
			timer = time.NewTimer(d.ChunkDelay)
			defer timer.Stop()
		}
		send := func(m *schema.Message) bool {
			if timer != nil {
				timer.Reset(d.ChunkDelay)
				select {
				case <-ctx.Done():
					sw.Send(nil, ctx.Err())
					return false
				case <-timer.C:
				}
			} else if ctx.Err() != nil {
				sw.Send(nil, ctx.Err())
				return false
			}
			return !sw.Send(m, nil)
		}
		completion := 0
		for _, w := range split(th) {
			completion++
			if !send(&schema.Message{Role: schema.Assistant, ReasoningContent: w}) {
				return
			}
		}
		for _, w := range split(ans) {
			completion++
			if !send(&schema.Message{Role: schema.Assistant, Content: w}) {
				return
			}
		}
		prompt := 0
		for _, m := range in {
			prompt += len(m.Content) / 4
		}
		send(&schema.Message{Role: schema.Assistant, ResponseMeta: &schema.ResponseMeta{
			FinishReason: "stop",
			Usage:        &schema.TokenUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion},
		}})
	}()
	return sr, nil
}

// WithTools returns the demo itself: it never calls tools.
func (d *Demo) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return d, nil }

// splitWords cuts s into words that keep their trailing space, so the
// pieces concatenate back to s.
func splitWords(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

func lastUserText(in []*schema.Message) string {
	for i := len(in) - 1; i >= 0; i-- {
		if in[i].Role == schema.User {
			return in[i].Content
		}
	}
	return ""
}

var _ model.ToolCallingChatModel = (*Demo)(nil)
