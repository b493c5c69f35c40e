package llm

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/internal/providertest"
)

var history = []*schema.Message{
	schema.SystemMessage("Be brief."),
	schema.UserMessage("What is 2+2?"),
	{Role: schema.Assistant, Content: "", ReasoningContent: "secret chain of thought",
		ToolCalls: []schema.ToolCall{{ID: "call_1", Function: schema.FunctionCall{Name: "calc", Arguments: `{"expr":"2+2"}`}}}},
	schema.ToolMessage("4", "call_1", schema.WithToolName("calc")),
	{Role: schema.Assistant, Content: "4", ReasoningContent: "more secret thoughts"},
	schema.UserMessage("Thanks"),
}

// sentBody streams one call with opts and returns the request body.
func sentBody(t *testing.T, m model.BaseChatModel, srv *providertest.Server, opts ...model.Option) map[string]any {
	t.Helper()
	n := len(srv.Requests())
	sr, err := m.Stream(testContext(t), history, opts...)
	if err != nil {
		t.Fatal(err)
	}
	sr.Close()
	reqs := srv.Requests()
	if len(reqs) != n+1 {
		t.Fatalf("requests = %d, want %d", len(reqs), n+1)
	}
	return reqs[n].Body
}

func TestOpenAIRequestMessages(t *testing.T) {
	t.Parallel()
	for _, c := range openAIClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.New(t)
			body := sentBody(t, newOpenAIModel(t, c, srv, nil), srv)
			raw, _ := json.Marshal(body)
			if strings.Contains(string(raw), "secret") {
				t.Errorf("assistant reasoning was sent back: %s", raw)
			}
			msgs, _ := body["messages"].([]any)
			if len(msgs) != len(history) {
				t.Fatalf("messages = %d", len(msgs))
			}
			roles := []string{"system", "user", "assistant", "tool", "assistant", "user"}
			for i, r := range roles {
				if got := msgs[i].(map[string]any)["role"]; got != r {
					t.Errorf("message %d role = %v, want %s", i, got, r)
				}
			}
			call := msgs[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
			fn := call["function"].(map[string]any)
			if call["id"] != "call_1" || call["type"] != "function" || fn["name"] != "calc" || fn["arguments"] != `{"expr":"2+2"}` {
				t.Errorf("tool call = %v", call)
			}
			tool := msgs[3].(map[string]any)
			if tool["tool_call_id"] != "call_1" || tool["content"] != "4" {
				t.Errorf("tool message = %v", tool)
			}
		})
	}
}

func TestLeanRequestOptions(t *testing.T) {
	t.Parallel()
	srv := providertest.New(t)
	temp := float32(0.5)
	m := newOpenAIModel(t, openAIClients[0], srv, func(c *OpenAIConfig) { c.Temperature, c.MaxTokens = &temp, 100 })

	body := sentBody(t, m, srv)
	if body["model"] != "fake-model" || body["temperature"] != 0.5 || body["max_tokens"] != float64(100) {
		t.Errorf("defaults: model %v temperature %v max_tokens %v", body["model"], body["temperature"], body["max_tokens"])
	}
	if _, ok := body["tools"]; ok {
		t.Errorf("tools sent without tools: %v", body["tools"])
	}

	body = sentBody(t, m, srv, model.WithTemperature(0), model.WithMaxTokens(7), model.WithModel("other"),
		model.WithTopP(0.9), model.WithStop([]string{"END"}))
	if body["model"] != "other" || body["temperature"] != 0.0 || body["max_tokens"] != float64(7) ||
		body["top_p"] != 0.9 || !reflect.DeepEqual(body["stop"], []any{"END"}) {
		t.Errorf("overrides: %v", body)
	}
}

func TestLeanRequestTools(t *testing.T) {
	t.Parallel()
	srv := providertest.New(t)
	base := newOpenAIModel(t, openAIClients[0], srv, nil)
	search := &schema.ToolInfo{Name: "search", Desc: "Search the web.", ParamsOneOf: schema.NewParamsOneOfByParams(
		map[string]*schema.ParameterInfo{"q": {Type: schema.String, Desc: "query", Required: true}})}
	clock := &schema.ToolInfo{Name: "clock", Desc: "Current time."}
	withTools, err := base.WithTools([]*schema.ToolInfo{search, clock})
	if err != nil {
		t.Fatal(err)
	}

	if _, ok := sentBody(t, base, srv)["tools"]; ok {
		t.Error("WithTools changed the original client")
	}
	body := sentBody(t, withTools, srv)
	tools := body["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("tools = %v", tools)
	}
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	params := fn["parameters"].(map[string]any)
	if fn["name"] != "search" || fn["description"] != "Search the web." || params["type"] != "object" ||
		!reflect.DeepEqual(params["required"], []any{"q"}) {
		t.Errorf("search tool = %v", fn)
	}
	if p := tools[1].(map[string]any)["function"].(map[string]any)["parameters"].(map[string]any); p["type"] != "object" {
		t.Errorf("a tool without parameters needs an empty object schema: %v", p)
	}
	if _, ok := body["tool_choice"]; ok {
		t.Errorf("tool_choice sent without being asked: %v", body["tool_choice"])
	}

	choices := []struct {
		opts []model.Option
		want any
	}{
		{[]model.Option{model.WithToolChoice(schema.ToolChoiceForbidden)}, "none"},
		{[]model.Option{model.WithToolChoice(schema.ToolChoiceAllowed)}, "auto"},
		{[]model.Option{model.WithToolChoice(schema.ToolChoiceForced)}, "required"},
		{[]model.Option{model.WithToolChoice(schema.ToolChoiceForced, "clock")},
			map[string]any{"type": "function", "function": map[string]any{"name": "clock"}}},
	}
	for _, c := range choices {
		if got := sentBody(t, withTools, srv, c.opts...)["tool_choice"]; !reflect.DeepEqual(got, c.want) {
			t.Errorf("tool_choice = %v, want %v", got, c.want)
		}
	}
	if body := sentBody(t, withTools, srv, model.WithTools(nil)); body["tools"] != nil || body["tool_choice"] != nil {
		t.Errorf("per-call WithTools(nil) should send no tools: %v", body["tools"])
	}
	if tools := sentBody(t, base, srv, model.WithTools([]*schema.ToolInfo{clock}))["tools"].([]any); len(tools) != 1 {
		t.Errorf("per-call tools = %v", tools)
	}
}
