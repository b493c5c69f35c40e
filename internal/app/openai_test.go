package app_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/pipeline"
)

// openAIClient is the official OpenAI Go client pointed at the harness.
func (h *harness) openAIClient(opts ...option.RequestOption) openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(h.url("/v1/")),
		option.WithAPIKey(cmp.Or(h.token, "unused-in-open-mode")),
		option.WithHTTPClient(h.client),
		option.WithMaxRetries(0),
	}
	return openai.NewClient(append(base, opts...)...)
}

const (
	oaThought = "The user wants the capital; it is Paris."
	oaAnswer  = "The capital of France is Paris."
)

// thinkingScript streams reasoning_content, then the answer, then usage.
func thinkingScript() providertest.Script {
	return providertest.Script{
		Chunks: append(providertest.ReasoningContent(oaThought, 4), providertest.Answer(oaAnswer, 5)...),
		Usage:  &providertest.Usage{PromptTokens: 31, CompletionTokens: 17, ReasoningTokens: 9},
	}
}

func conversation() []openai.ChatCompletionMessageParamUnion {
	return []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a pirate."), // left out: the mode's prompt applies
		openai.UserMessage("Hi!"),
		openai.AssistantMessage("<think>greet back</think>Hello."),
		openai.UserMessage("What is the capital of France?"),
	}
}

func TestOpenAIClientNonStreamingCompletion(t *testing.T) {
	h := newHarness(t)
	h.provider.Enqueue(thinkingScript())
	sessionsBefore, messagesBefore := h.historyRows()
	client := h.openAIClient()

	resp, err := client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "chat", Messages: conversation(), Temperature: openai.Float(0.2),
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Object != "chat.completion" || resp.Model != "chat" || !strings.HasPrefix(resp.ID, "chatcmpl-") || len(resp.Choices) != 1 {
		t.Fatalf("completion = %s", resp.RawJSON())
	}
	msg := resp.Choices[0].Message
	if msg.Content != oaAnswer || resp.Choices[0].FinishReason != "stop" || msg.Role != "assistant" {
		t.Fatalf("message = %s", resp.RawJSON())
	}
	var reasoning string
	_ = json.Unmarshal([]byte(msg.JSON.ExtraFields["reasoning_content"].Raw()), &reasoning)
	if reasoning != oaThought {
		t.Fatalf("reasoning_content = %q", reasoning)
	}
	if u := resp.Usage; u.PromptTokens != 31 || u.CompletionTokens != 17 || u.TotalTokens != 48 ||
		u.CompletionTokensDetails.ReasoningTokens != 9 {
		t.Fatalf("usage = %s", resp.Usage.RawJSON())
	}

	// The model saw the conversation as history, with the mode's system
	// prompt instead of the request's and without the old reasoning.
	msgs := providerMessages(h.provider.Requests()[0])
	want := []string{"user: Hi!", "assistant: Hello.", "user: What is the capital of France?"}
	if strings.Join(msgs[len(msgs)-3:], "|") != strings.Join(want, "|") || strings.Contains(strings.Join(msgs, "|"), "pirate") {
		t.Fatalf("provider messages = %q", msgs)
	}
	if s, m := h.historyRows(); s != sessionsBefore || m != messagesBefore {
		t.Fatalf("the completion was saved: %d/%d rows", s, m)
	}
}

func TestOpenAIClientStreamingCompletionWithUsage(t *testing.T) {
	h := newHarness(t)
	h.provider.Enqueue(thinkingScript())
	client := h.openAIClient()

	stream := client.Chat.Completions.NewStreaming(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "chat", Messages: conversation(),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	var reasoning strings.Builder
	var finish string
	var ext handler.OpenAIExtension
	chunks, usageChunks := 0, 0
	for stream.Next() {
		c := stream.Current()
		chunks++
		acc.AddChunk(c)
		if c.Object != "chat.completion.chunk" || c.Model != "chat" {
			t.Fatalf("chunk = %s", c.RawJSON())
		}
		if len(c.Choices) == 0 {
			usageChunks++
			continue
		}
		if f, ok := c.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
			var s string
			_ = json.Unmarshal([]byte(f.Raw()), &s)
			reasoning.WriteString(s)
		}
		if c.Choices[0].FinishReason != "" {
			finish = c.Choices[0].FinishReason
			if err := json.Unmarshal([]byte(c.JSON.ExtraFields["chatpipe"].Raw()), &ext); err != nil {
				t.Fatalf("final chunk without the chatpipe extension: %s", c.RawJSON())
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != oaAnswer {
		t.Fatalf("content = %q", got)
	}
	if reasoning.String() != oaThought {
		t.Fatalf("reasoning_content = %q", reasoning.String())
	}
	if finish != "stop" || ext.Status != "completed" || ext.StreamID == "" {
		t.Fatalf("finish %q, extension %+v", finish, ext)
	}
	if usageChunks != 1 || acc.Usage.PromptTokens != 31 || acc.Usage.CompletionTokens != 17 || acc.Usage.TotalTokens != 48 {
		t.Fatalf("%d usage chunks, usage %+v", usageChunks, acc.Usage)
	}
}

// With think_tags (a body field, or the header for UIs that can only add
// headers) thinking arrives inside content as <think>…</think>, streamed
// and not, whatever the mode's own think_tags setting.
func TestOpenAIThinkTagsInContent(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { // a mode whose own thinking has no tags
		c.Pipelines["notags"] = []any{map[string]any{"chat_completion_stream": map[string]any{"think_tags": false}}}
	})
	client := h.openAIClient()
	want := "<think>" + oaThought + "</think>" + oaAnswer

	h.provider.Enqueue(thinkingScript())
	stream := client.Chat.Completions.NewStreaming(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "chat", Messages: conversation(),
	}, option.WithJSONSet("think_tags", true))
	var content strings.Builder
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) > 0 {
			content.WriteString(c.Choices[0].Delta.Content)
			if _, ok := c.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
				t.Fatalf("reasoning_content sent with think_tags: %s", c.RawJSON())
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if content.String() != want {
		t.Fatalf("streamed content = %q", content.String())
	}

	h.provider.Enqueue(thinkingScript())
	resp, err := client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "notags", Messages: conversation(),
	}, option.WithHeader(handler.ThinkTagsHeader, "true"))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != want {
		t.Fatalf("content = %q", got)
	}
	if _, ok := resp.Choices[0].Message.JSON.ExtraFields["reasoning_content"]; ok {
		t.Fatalf("reasoning_content sent with think tags: %s", resp.RawJSON())
	}
}

func TestOpenAIModelsAreTheChatModes(t *testing.T) {
	h := newHarness(t)
	client := h.openAIClient()
	page, err := client.Models.List(ctxTimeout(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		if m.OwnedBy != "chatpipe" || m.Object != "model" {
			t.Fatalf("model = %s", m.RawJSON())
		}
	}
	var modes []string
	for mode := range h.app.Config().Pipelines {
		modes = append(modes, mode)
	}
	slices.Sort(modes)
	if strings.Join(ids, ",") != strings.Join(modes, ",") || !slices.Contains(ids, "rag") {
		t.Fatalf("models = %v, want the modes %v", ids, modes)
	}
	if m, err := client.Models.Get(ctxTimeout(t), "rag"); err != nil || m.ID != "rag" {
		t.Fatalf("get rag: %+v %v", m, err)
	}

	// An unknown model is OpenAI's 404, on both routes.
	_, err = client.Models.Get(ctxTimeout(t), "gpt-4o")
	checkAPIError(t, err, http.StatusNotFound, "invalid_request_error", "model_not_found", "model")
	_, err = client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("q")}})
	checkAPIError(t, err, http.StatusNotFound, "invalid_request_error", "model_not_found", "model")
}

func checkAPIError(t *testing.T, err error, status int, typ, code, param string) *openai.Error {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("error = %v, want an API error", err)
	}
	if apiErr.StatusCode != status || apiErr.Type != typ || apiErr.Code != code || apiErr.Param != param || apiErr.Message == "" {
		t.Fatalf("error = %d %s", apiErr.StatusCode, apiErr.RawJSON())
	}
	return apiErr
}

func TestOpenAIProviderFailures(t *testing.T) {
	h := newHarness(t)
	client := h.openAIClient()
	params := openai.ChatCompletionNewParams{Model: "chat", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("q")}}

	// Before the first token: an HTTP error status, streamed or not.
	h.provider.Enqueue(providertest.Script{Status: http.StatusTooManyRequests, Error: providertest.ErrorObject{Message: "slow down"}})
	_, err := client.Chat.Completions.New(ctxTimeout(t), params)
	apiErr := checkAPIError(t, err, http.StatusTooManyRequests, "rate_limit_error", "rate_limited", "")
	if strings.Contains(apiErr.Message, h.provider.BaseURL()) {
		t.Fatalf("the error names the provider's URL: %q", apiErr.Message)
	}
	h.provider.Enqueue(providertest.Script{Status: http.StatusInternalServerError})
	stream := client.Chat.Completions.NewStreaming(ctxTimeout(t), params)
	for stream.Next() {
		t.Fatalf("chunk before the error: %s", stream.Current().RawJSON())
	}
	checkAPIError(t, stream.Err(), http.StatusBadGateway, "server_error", "provider_error", "")

	// After the first token: an error frame, then [DONE].
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Content("Half an ans", 3),
		MidStreamError: &providertest.StreamError{After: 3, ErrorObject: providertest.ErrorObject{Message: "overloaded"}}})
	stream = client.Chat.Completions.NewStreaming(ctxTimeout(t), params)
	var content strings.Builder
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			content.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if stream.Err() == nil || !strings.Contains(stream.Err().Error(), "error while streaming") || content.String() != "Half an ans" {
		t.Fatalf("mid-stream failure: content %q, err %v", content.String(), stream.Err())
	}
}

// readOpenAIFrames posts a raw streaming request and returns its data lines.
func (h *harness) readOpenAIFrames(body string, header ...string) (*http.Response, []string) {
	h.t.Helper()
	resp := h.do(context.Background(), "POST", "/v1/chat/completions", body, header...)
	defer resp.Body.Close()
	var frames []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			frames = append(frames, line)
		}
	}
	return resp, frames
}

// The wire format, frame by frame: a role chunk first, deltas, a final
// chunk with finish_reason and the references, the usage chunk, [DONE];
// an error frame then [DONE] when the run fails mid-answer.
func TestOpenAIStreamWireFormat(t *testing.T) {
	h := newHarness(t, ragMode)
	h.addDocument("Starter care", sourdough)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Feed it twice a day [1].", 3),
		Usage: &providertest.Usage{PromptTokens: 5, CompletionTokens: 6}})
	resp, frames := h.readOpenAIFrames(`{"model":"rag","stream":true,"stream_options":{"include_usage":true},
		"messages":[{"role":"user","content":[{"type":"text","text":"How often do I feed the sourdough starter?"}]}],
		"n":1,"tools":[],"user":"someone"}`)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if len(frames) < 5 || frames[len(frames)-1] != "[DONE]" {
		t.Fatalf("frames = %q", frames)
	}
	type chunk struct {
		Choices []struct {
			Delta        map[string]any
			FinishReason *string `json:"finish_reason"`
		}
		Usage    *handler.OpenAIUsage
		Chatpipe *handler.OpenAIExtension
	}
	var cs []chunk
	for _, f := range frames[:len(frames)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(f), &c); err != nil {
			t.Fatalf("frame %q: %v", f, err)
		}
		cs = append(cs, c)
	}
	if cs[0].Choices[0].Delta["role"] != "assistant" || cs[0].Choices[0].FinishReason != nil {
		t.Fatalf("first chunk = %s", frames[0])
	}
	final, usage := cs[len(cs)-2], cs[len(cs)-1]
	if final.Choices[0].FinishReason == nil || *final.Choices[0].FinishReason != "stop" || final.Chatpipe == nil ||
		len(final.Chatpipe.References) == 0 || final.Chatpipe.References[0].Title != "Starter care" {
		t.Fatalf("final chunk = %s", frames[len(frames)-3])
	}
	if len(usage.Choices) != 0 || usage.Usage == nil || usage.Usage.TotalTokens != 11 {
		t.Fatalf("usage chunk = %s", frames[len(frames)-2])
	}
	var answer strings.Builder
	for _, c := range cs[1 : len(cs)-2] {
		answer.WriteString(c.Choices[0].Delta["content"].(string))
	}
	if answer.String() != "Feed it twice a day [1]." {
		t.Fatalf("answer = %q", answer.String())
	}

	h.provider.Enqueue(providertest.Script{Chunks: providertest.Content("Half", 2),
		MidStreamError: &providertest.StreamError{After: 2, ErrorObject: providertest.ErrorObject{Message: "boom"}}})
	_, frames = h.readOpenAIFrames(`{"model":"chat","stream":true,"messages":[{"role":"user","content":"q"}]}`)
	n := len(frames)
	var e struct{ Error handler.ErrorDetail }
	if n < 3 || frames[n-1] != "[DONE]" || json.Unmarshal([]byte(frames[n-2]), &e) != nil || e.Error.Code != "provider_error" {
		t.Fatalf("frames after a mid-stream failure = %q", frames)
	}
}

func TestOpenAIRejectsBadRequestsInOpenAIShape(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ name, body, code, param string }{
		{"no messages", `{"model":"chat","messages":[]}`, "empty_messages", "messages"},
		{"only a system message", `{"model":"chat","messages":[{"role":"system","content":"hi"}]}`, "no_user_message", "messages"},
		{"ends with the assistant", `{"model":"chat","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`, "no_user_message", "messages"},
		{"an image", `{"model":"chat","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`, "unsupported_content", "messages[0].content[0].type"},
		{"not JSON", `{"model":`, "invalid_json", ""},
		{"empty question", `{"model":"chat","messages":[{"role":"user","content":""}]}`, "empty_content", "messages[0].content"},
	} {
		resp := h.do(context.Background(), "POST", "/v1/chat/completions", tc.body)
		var e struct {
			Error struct {
				Message, Type string
				Code, Param   *string
			}
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		param := ""
		if e.Error.Param != nil {
			param = *e.Error.Param
		}
		if resp.StatusCode != http.StatusBadRequest || e.Error.Type != "invalid_request_error" || e.Error.Code == nil ||
			*e.Error.Code != tc.code || param != tc.param || e.Error.Message == "" {
			t.Errorf("%s: %d %+v", tc.name, resp.StatusCode, e.Error)
		}
	}
	if n := len(h.provider.Requests()); n != 0 {
		t.Fatalf("%d provider requests for rejected requests", n)
	}
}

func TestOpenAIUsesTheSameKeysAndTenants(t *testing.T) {
	h := newHarness(t, withTwoTenants)
	params := openai.ChatCompletionNewParams{Model: "chat", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("q")}}
	anonymous, acme := h.openAIClient(), h.as(acmeKey).openAIClient()
	_, err := anonymous.Chat.Completions.New(ctxTimeout(t), params)
	checkAPIError(t, err, http.StatusUnauthorized, "authentication_error", "invalid_api_key", "")
	resp := h.do(context.Background(), "GET", "/v1/models", "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no key: %d", resp.StatusCode)
	}
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("ok", 1)})
	out, err := acme.Chat.Completions.New(ctxTimeout(t), params)
	if err != nil || out.Choices[0].Message.Content != "ok" {
		t.Fatalf("with a valid key: %v", err)
	}
}

// A streaming client that goes away stops the generation: nothing is
// saved, so nobody could read the rest.
func TestOpenAIClientThatLeavesStopsTheGeneration(t *testing.T) {
	h := newHarness(t)
	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Content("one two three", 3), Hold: gate, HoldAfter: 1})
	ctx, cancel := context.WithCancel(context.Background())
	client := h.openAIClient()
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "chat", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("q")}})
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			break
		}
	}
	cancel()
	stream.Close()
	if err := h.provider.WaitAbort(ctxTimeout(t)); err != nil {
		t.Fatalf("the provider call went on: %v", err)
	}
	h.waitLog("stream finished")
	for _, e := range h.logs.All() {
		if e.Message == "stream finished" && e.ContextMap()["status"] != eventbus.StatusStopped {
			t.Fatalf("stream finished %v", e.ContextMap())
		}
	}
}

// An answer that takes longer than server.write_timeout to generate is
// still delivered whole: the deadline is renewed before writing it.
func TestWholeAnswersOutliveTheServerWriteTimeout(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.Server.WriteTimeout = 300 * time.Millisecond })
	srv := httptest.NewUnstartedServer(h.app.Handler())
	srv.Config.WriteTimeout = h.app.Config().Server.WriteTimeout // as app.Serve sets it
	srv.Start()
	t.Cleanup(srv.Close)
	slow := providertest.Script{Chunks: providertest.Answer("slow but whole", 4), Delay: 200 * time.Millisecond}

	h.provider.Enqueue(slow)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	resp, err := client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "chat", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("q")}})
	if err != nil || resp.Choices[0].Message.Content != "slow but whole" {
		t.Fatalf("completion: %v", err)
	}

	h.provider.Enqueue(slow)
	r, err := http.Post(srv.URL+"/api/v1/chat", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"q"}],"stream":false}`))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var msg handler.MessageJSON
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil || msg.Content != "slow but whole" {
		t.Fatalf("stateless JSON answer: %v %+v", err, msg)
	}
}

// test_filtered stands for a filter plugin that ends an answer midway, as
// sensitive_filter does: some text, then the error content_filtered.
func init() {
	pipeline.Register("test_filtered", func(pipeline.PluginConfig) (pipeline.Plugin, error) { return filtered{}, nil })
}

type filtered struct{}

func (filtered) Name() string                 { return "test_filtered" }
func (filtered) Events() []pipeline.EventType { return []pipeline.EventType{"test_filtered"} }
func (filtered) OnEvent(_ context.Context, _ pipeline.EventType, cm *pipeline.ChatManage, _ func() *pipeline.PluginError) *pipeline.PluginError {
	cm.Emit(eventbus.Event{Type: eventbus.TypeAnswerStart})
	cm.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, "The secret is "))
	cm.Emit(eventbus.Event{Type: eventbus.TypeAnswerEnd})
	return &pipeline.PluginError{Code: "content_filtered", Message: "The answer was stopped by the content filter."}
}

// An answer a filter ends is OpenAI's finish_reason content_filter, with
// the text sent before it, not an error.
func TestOpenAIFilteredAnswerFinishesWithContentFilter(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.Pipelines["filtered"] = []any{"test_filtered", "chat_completion_stream"} })
	client := h.openAIClient()
	params := openai.ChatCompletionNewParams{Model: "filtered", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("q")}}
	resp, err := client.Chat.Completions.New(ctxTimeout(t), params)
	if err != nil || resp.Choices[0].FinishReason != "content_filter" || resp.Choices[0].Message.Content != "The secret is " {
		t.Fatalf("completion: %v", err)
	}
	stream := client.Chat.Completions.NewStreaming(ctxTimeout(t), params)
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if stream.Err() != nil || acc.Choices[0].FinishReason != "content_filter" || acc.Choices[0].Message.Content != "The secret is " {
		t.Fatalf("stream: %v %+v", stream.Err(), acc.Choices)
	}
}

// A streaming completion cannot take back what it sent, so it runs
// without mid-stream retry and a broken provider stream fails it as
// before; a whole completion retries and leaves the broken attempt out.
func TestOpenAIMidStreamRetryOnlyForWholeCompletions(t *testing.T) {
	h := newHarness(t, streamRetry(2))
	client := h.openAIClient()
	params := openai.ChatCompletionNewParams{Model: "chat", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("q")}}
	broken := providertest.Script{Chunks: providertest.Content("Half an ans", 3), Drop: true}

	h.provider.Enqueue(broken, providertest.Script{Chunks: providertest.Answer("A whole answer.", 2)})
	c, err := client.Chat.Completions.New(ctxTimeout(t), params)
	if err != nil || len(c.Choices) != 1 || c.Choices[0].Message.Content != "A whole answer." {
		t.Fatalf("whole completion %+v, %v", c, err)
	}
	if n := len(h.provider.Requests()); n != 2 {
		t.Fatalf("%d provider requests for a retried whole completion", n)
	}

	h.provider.Enqueue(broken, providertest.Script{Chunks: providertest.Answer("Never asked for.", 2)})
	stream := client.Chat.Completions.NewStreaming(ctxTimeout(t), params)
	var content strings.Builder
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			content.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if stream.Err() == nil || content.String() != "Half an ans" {
		t.Fatalf("streamed completion: content %q, err %v", content.String(), stream.Err())
	}
	if n := len(h.provider.Requests()); n != 3 {
		t.Fatalf("%d provider requests: the streaming completion was retried mid-stream", n)
	}
}
