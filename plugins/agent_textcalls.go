package plugins

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/cloudwego/eino/schema"
)

// Small models often write a tool call as text instead of using the
// tool-call field: a JSON object ({"name": …, "arguments": …}), an array
// of them, inside a ```json fence or Hermes-style <tool_call> tags. The
// agent loop holds an answer that starts like one and extracts the calls
// when the model call ends (Onyx's fallback extraction, tried once per
// cycle).

// textCallStarts are how a tool call written as text begins.
var textCallStarts = []string{"{", "[{", "```", "<tool_call>"}

type verdict int

const (
	verdictMaybe verdict = iota // too little text to tell
	verdictYes                  // starts like a tool call
	verdictNo                   // an ordinary answer
)

// textCallVerdict tells from the start of an answer whether it may be a
// tool call written as text.
func textCallVerdict(text string) verdict {
	t := strings.Join(strings.Fields(text), "")
	if t == "" {
		return verdictMaybe
	}
	undecided := false
	for _, s := range textCallStarts {
		if strings.HasPrefix(t, s) {
			return verdictYes
		}
		if strings.HasPrefix(s, t) {
			undecided = true
		}
	}
	if undecided {
		return verdictMaybe
	}
	return verdictNo
}

// textToolCalls extracts the tool calls written in text, keeping only
// calls of tools that offered reports as offered. Their IDs are left for
// the caller to set.
func textToolCalls(text string, offered func(name string) bool) []schema.ToolCall {
	var calls []schema.ToolCall
	for _, block := range textCallBlocks(text) {
		for _, v := range jsonValues(block) {
			collectCalls(v, offered, &calls)
		}
	}
	return calls
}

// textCallBlocks unwraps <tool_call> tags and code fences.
func textCallBlocks(text string) []string {
	text = strings.TrimSpace(text)
	if strings.Contains(text, "<tool_call>") {
		var blocks []string
		for _, part := range strings.Split(text, "<tool_call>")[1:] {
			body, _, _ := strings.Cut(part, "</tool_call>")
			blocks = append(blocks, strings.TrimSpace(body))
		}
		return blocks
	}
	if rest, ok := strings.CutPrefix(text, "```"); ok {
		_, body, _ := strings.Cut(rest, "\n") // drop the language tag line
		if i := strings.LastIndex(body, "```"); i >= 0 {
			body = body[:i]
		}
		text = strings.TrimSpace(body)
	}
	return []string{text}
}

// jsonValues decodes the JSON values text holds one after another, or
// failing that, the outermost {…} in it.
func jsonValues(text string) []any {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var out []any
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		out = append(out, v)
	}
	if len(out) > 0 {
		return out
	}
	i, j := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if i < 0 || j <= i {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(text[i:j+1]), &v); err != nil {
		return nil
	}
	return []any{v}
}

// collectCalls reads the shapes models use: {"name", "arguments" |
// "parameters" | "args" | "input"} (the arguments an object or a JSON
// string; without them, the other keys), {"function": {…}}, {"tool_calls":
// […]} and arrays of these.
func collectCalls(v any, offered func(string) bool, calls *[]schema.ToolCall) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			collectCalls(e, offered, calls)
		}
	case map[string]any:
		if list, ok := x["tool_calls"].([]any); ok {
			collectCalls(list, offered, calls)
			return
		}
		if fn, ok := x["function"].(map[string]any); ok {
			collectCalls(fn, offered, calls)
			return
		}
		name := firstString(x, "name", "tool", "tool_name", "function")
		if name == "" || !offered(name) {
			return
		}
		args, found := any(nil), false
		for _, k := range []string{"arguments", "parameters", "args", "input"} {
			if a, ok := x[k]; ok {
				args, found = a, true
				break
			}
		}
		if !found {
			rest := map[string]any{}
			for k, val := range x {
				switch k {
				case "name", "tool", "tool_name", "function", "type", "id":
				default:
					rest[k] = val
				}
			}
			args = rest
		}
		encoded, ok := encodeArguments(args)
		if !ok {
			return
		}
		*calls = append(*calls, schema.ToolCall{Type: "function",
			Function: schema.FunctionCall{Name: name, Arguments: encoded}})
	}
}

func firstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// encodeArguments renders arguments as the JSON object text a tool call
// carries: an object as is, a string holding an object decoded first.
func encodeArguments(args any) (string, bool) {
	if s, ok := args.(string); ok {
		s = strings.TrimSpace(s)
		if s == "" {
			return "{}", true
		}
		var obj map[string]any
		if json.Unmarshal([]byte(s), &obj) != nil {
			return "", false
		}
		args = obj
	}
	obj, ok := args.(map[string]any)
	if !ok {
		return "", false
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(obj) != nil {
		return "", false
	}
	return strings.TrimSpace(b.String()), true
}
