package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"
)

func TestChunkDecoder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want chunk
	}{
		{"openai content",
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt","system_fingerprint":"fp",` +
				`"choices":[{"index":0,"delta":{"content":" Hello"},"logprobs":null,"finish_reason":null}]}`,
			chunk{content: " Hello"}},
		{"role only", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`, chunk{}},
		{"null content", `{"choices":[{"delta":{"content":null,"reasoning_content":"r"}}]}`, chunk{reasoningContent: "r"}},
		{"reasoning key", `{"choices":[{"delta":{"reasoning":"hm"}}]}`, chunk{reasoning: "hm"}},
		{"finish", `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`, chunk{finishReason: "length"}},
		{"odd finish", `{"choices":[{"delta":{},"finish_reason":"eos_token"}]}`, chunk{finishReason: "eos_token"}},
		{"choice 1 ignored", `{"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"}}]}`,
			chunk{content: "yes"}},
		{"escapes", `{"choices":[{"delta":{"content":"a\"b\\c\/d\n\t\u00e9\ud83d\udc4b\ud800x"}}]}`,
			chunk{content: "a\"b\\c/d\n\té👋\uFFFDx"}},
		{"invalid utf-8", "{\"choices\":[{\"delta\":{\"content\":\"a\xffb\"}}]}", chunk{content: "a\uFFFDb"}},
		{"whitespace", " {\n \"choices\" : [ { \"delta\" : { \"content\" : \"x\" } } ] }\n", chunk{content: "x"}},
		{"tool call", `{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_1","type":"function",` +
			`"function":{"name":"f","arguments":"{\"a\":"}}]}}]}`,
			chunk{toolCalls: []schema.ToolCall{{Index: ptr(1), ID: "call_1", Type: "function",
				Function: schema.FunctionCall{Name: "f", Arguments: `{"a":`}}}}},
		{"tool call object arguments, no index", `{"choices":[{"message":{"tool_calls":[{"id":"a","function":` +
			`{"name":"f","arguments":{"x": [1, "]"]}}},{"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}`,
			chunk{toolCalls: []schema.ToolCall{
				{Index: ptr(0), ID: "a", Function: schema.FunctionCall{Name: "f", Arguments: `{"x": [1, "]"]}`}},
				{Index: ptr(1), ID: "b", Function: schema.FunctionCall{Name: "g", Arguments: "{}"}}}}},
		{"usage", `{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,` +
			`"prompt_tokens_details":{"cached_tokens":2,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":3}}}`,
			chunk{usage: &schema.TokenUsage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15,
				PromptTokenDetails:      schema.PromptTokenDetails{CachedTokens: 2},
				CompletionTokensDetails: schema.CompletionTokensDetails{ReasoningTokens: 3}}}},
		{"null usage", `{"choices":[{"delta":{"content":"x"}}],"usage":null}`, chunk{content: "x"}},
		{"float usage", `{"usage":{"prompt_tokens":1.0,"completion_tokens":2e1}}`,
			chunk{usage: &schema.TokenUsage{PromptTokens: 1, CompletionTokens: 20}}},
		{"error object", `{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`,
			chunk{err: &errorObject{message: "overloaded", typ: "server_error"}}},
		{"error numeric code", `{"error":{"message":"m","code":502}}`, chunk{err: &errorObject{message: "m", code: "502"}}},
		{"error string", `{"error":"boom"}`, chunk{err: &errorObject{message: "boom"}}},
		{"vllm error", `{"object":"error","message":"bad","type":"BadRequestError","code":400}`,
			chunk{err: &errorObject{message: "bad", typ: "BadRequestError", code: "400"}}},
		{"unknown nested values skipped", `{"x":{"a":[1,{"b":"}"}],"c":"\""},"choices":[{"logprobs":{"content":[{"token":"t"}]},` +
			`"delta":{"content":"ok","audio":{"id":"a"}}}],"y":[true,false,null,-1.5e3]}`, chunk{content: "ok"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d chunkDecoder
			var got chunk
			if err := d.decode([]byte(c.in), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestChunkDecoderRejectsBrokenJSON(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `[]`, `{`, `{"choices":[{"delta":{"content":"x}]}`, `{"a":1,}x`,
		`{"choices":[{"delta":{"content":"x"}}]} trailing`, `{"a" 1}`, `{"choices":[{"delta":{"content":"x"}}`,
		`{"choices":[{"delta":{"content":"x"} "y":1}]}`, `{"a":tru}`} {
		var d chunkDecoder
		var c chunk
		if err := d.decode([]byte(in), &c); err == nil {
			t.Errorf("decode(%q) succeeded: %+v", in, c)
		}
	}
}

// TestContentDeltaAllocations pins the hot path's cost: decoding a content
// delta allocates only its content string.
func TestContentDeltaAllocations(t *testing.T) {
	data := []byte(`{"id":"chatcmpl-9xyz","object":"chat.completion.chunk","created":1726000000,"model":"gpt-4o-mini",` +
		`"system_fingerprint":"fp_0aa8d3e20b","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}]}`)
	var d chunkDecoder
	var c chunk
	allocs := testing.AllocsPerRun(1000, func() {
		if err := d.decode(data, &c); err != nil || c.content != " world" {
			t.Fatal(err, c.content)
		}
	})
	if allocs > 1 {
		t.Errorf("decoding a content delta allocates %v times, want 1", allocs)
	}
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 100_000)
	in := "a\r\nb\n\n" + long + "\nlast"
	lr := lineReader{br: bufio.NewReaderSize(strings.NewReader(in), 16)}
	var got []string
	for {
		line, err := lr.next()
		got = append(got, string(line))
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
	}
	if want := []string{"a", "b", "", long, "last"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines = %q", got)
	}
}

func TestDataPayload(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"data: {}": "{}", "data:{}": "{}", "data:  [DONE] ": "[DONE]", "data:": "", ": data: x": "",
		"event: data": "", "data": "", "data:\t{}\r": "{}",
	} {
		got, ok := dataPayload([]byte(in))
		if string(got) != want || ok != (want != "") {
			t.Errorf("dataPayload(%q) = %q %v", in, got, ok)
		}
	}
}

// --- Fuzzing against encoding/json ---

type stdChunk struct {
	Object  string       `json:"object"`
	Choices []*stdChoice `json:"choices"`
	Usage   *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails *struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type stdChoice struct {
	Index        int       `json:"index"`
	Delta        *stdDelta `json:"delta"`
	Message      *stdDelta `json:"message"`
	FinishReason string    `json:"finish_reason"`
}

type stdDelta struct {
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content"`
	Reasoning        string `json:"reasoning"`
	ToolCalls        []*struct {
		Index    *int   `json:"index"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

var decoderKeys = []string{"choices", "index", "delta", "message", "finish_reason", "content", "reasoning_content",
	"reasoning", "tool_calls", "id", "type", "function", "name", "arguments", "usage", "prompt_tokens",
	"completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details", "cached_tokens",
	"reasoning_tokens", "error", "object", "detail", "code"}

// comparable reports whether encoding/json and our decoder should agree on
// data: no duplicate keys (encoding/json merges them in its own ways) and
// no keys that only match case-insensitively (encoding/json folds case).
func comparable(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		keys   map[string]bool
		expect bool // object: the next token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return errors.Is(err, io.EOF)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expect {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k := tok.(string)
			if top.keys[k] {
				return false
			}
			top.keys[k] = true
			for _, known := range decoderKeys {
				if k != known && strings.EqualFold(k, known) {
					return false
				}
			}
			top.expect = false
			continue
		}
		if top != nil && top.object {
			top.expect = true
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, &frame{object: true, keys: map[string]bool{}, expect: true})
			case '[':
				stack = append(stack, &frame{})
			case ']':
				stack = stack[:len(stack)-1]
			}
		}
	}
}

func FuzzChunkDecoder(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"index":0,"delta":{"content":" Hello"},"finish_reason":null}]}`,
		`{"choices":[{"delta":{"reasoning_content":"a\u00e9\ud83d\udc4b","reasoning":"b"}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{\"q\":1}"}}]}}]}`,
		`{"choices":[{"index":1,"delta":{"content":"x"}},{"delta":{"content":"y"},"finish_reason":"stop"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"completion_tokens_details":{"reasoning_tokens":1}}}`,
		`{"error":{"message":"m","type":"t","code":"c"}}`,
		`{"choices":[{"message":{"content":"whole"},"finish_reason":"stop"}]}`,
		"{\"choices\":[{\"delta\":{\"content\":\"\xff\\ud800\"}}]}",
		`{"Choices":[{"delta":{"content":"x"}}]}`,
		`null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d chunkDecoder
		var got chunk
		ourErr := d.decode(data, &got) // must never panic
		var std stdChunk
		if json.Unmarshal(data, &std) != nil || !comparable(data) {
			return // we may be more lenient than encoding/json; that is fine
		}
		if ourErr != nil {
			if string(bytes.TrimSpace(data)) == "null" {
				return
			}
			t.Fatalf("encoding/json accepts %q, we fail: %v", data, ourErr)
		}
		var want chunk
		for _, ch := range std.Choices {
			if ch == nil || ch.Index != 0 {
				continue
			}
			if ch.Delta != nil && ch.Message != nil {
				return // we merge both into one; encoding/json keeps them apart
			}
			dl := ch.Delta
			if dl == nil {
				dl = ch.Message
			}
			want.finishReason = ch.FinishReason
			if dl != nil {
				want.content, want.reasoningContent, want.reasoning = dl.Content, dl.ReasoningContent, dl.Reasoning
				for i, tc := range dl.ToolCalls {
					if tc == nil {
						want.toolCalls = append(want.toolCalls, schema.ToolCall{})
						continue
					}
					idx := i
					if tc.Index != nil {
						idx = *tc.Index
					}
					want.toolCalls = append(want.toolCalls, schema.ToolCall{Index: &idx, ID: tc.ID, Type: tc.Type,
						Function: schema.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
				}
			}
			break
		}
		if u := std.Usage; u != nil {
			want.usage = &schema.TokenUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
				TotalTokens: u.TotalTokens}
			if u.PromptTokensDetails != nil {
				want.usage.PromptTokenDetails.CachedTokens = u.PromptTokensDetails.CachedTokens
			}
			if u.CompletionTokensDetails != nil {
				want.usage.CompletionTokensDetails.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
			}
		}
		got.err = nil // error objects are covered by TestChunkDecoder
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("input %q\n got  %+v\nwant %+v", data, got, want)
		}
	})
}
