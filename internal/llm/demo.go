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
// then a usage chunk. It stops as soon as ctx ends.
//
// The stream has no goroutine of its own: each chunk is made, after the
// pause, inside the reader's Recv (eino's convert reader over an array of
// empty slots, one per chunk). A pump goroutine would cost every live
// answer a stack and a channel for nothing, and closing the reader needs
// nothing stopped.
func (d *Demo) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	th, ans, split := demoReply(lastUserText(in))
	thinking, answer := split(th), split(ans)
	c := &demoChunks{ctx: ctx, delay: d.ChunkDelay, thinking: thinking, answer: answer}
	for _, m := range in {
		c.prompt += len(m.Content) / 4
	}
	slots := make([]struct{}, len(thinking)+len(answer)+1) // the usage chunk last; zero-size, no allocation
	return schema.StreamReaderWithConvert(schema.StreamReaderFromArray(slots), c.next), nil
}

// demoChunks makes the demo stream's chunks one Recv at a time (a
// StreamReader has one consumer, so no lock).
type demoChunks struct {
	ctx              context.Context
	delay            time.Duration
	timer            *time.Timer
	thinking, answer []string
	prompt           int
	sent             int
	ended            bool // ctx ended: its error was returned, the rest is dropped
}

// next waits the chunk delay and returns the next chunk; once ctx has
// ended it returns ctx's error once and drops every later slot, so the
// reader sees that error and then io.EOF.
func (c *demoChunks) next(struct{}) (*schema.Message, error) {
	if c.ended {
		return nil, schema.ErrNoValue
	}
	if c.delay > 0 {
		if c.timer == nil {
			c.timer = time.NewTimer(c.delay)
		} else {
			c.timer.Reset(c.delay)
		}
		select {
		case <-c.ctx.Done():
			c.timer.Stop()
		case <-c.timer.C:
		}
	}
	if err := c.ctx.Err(); err != nil {
		c.ended = true
		return nil, err
	}
	i := c.sent
	c.sent++
	switch {
	case i < len(c.thinking):
		return &schema.Message{Role: schema.Assistant, ReasoningContent: c.thinking[i]}, nil
	case i < len(c.thinking)+len(c.answer):
		return &schema.Message{Role: schema.Assistant, Content: c.answer[i-len(c.thinking)]}, nil
	}
	completion := len(c.thinking) + len(c.answer)
	if c.timer != nil {
		c.timer.Stop()
	}
	return &schema.Message{Role: schema.Assistant, ResponseMeta: &schema.ResponseMeta{
		FinishReason: "stop",
		Usage:        &schema.TokenUsage{PromptTokens: c.prompt, CompletionTokens: completion, TotalTokens: c.prompt + completion},
	}}, nil
}

// WithTools returns the demo itself: it never calls tools.
func (d *Demo) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return d, nil }

// splitWords cuts s into words that keep their trailing space, so the
// pieces concatenate back to s.
func splitWords(s string) []string {
	out := make([]string, 0, strings.Count(s, " ")+1) // held for the whole stream: no growth slack
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
