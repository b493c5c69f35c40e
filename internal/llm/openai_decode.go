package llm

import (
	"bytes"
	"errors"
	"strings"

	"github.com/cloudwego/eino/schema"
)

// This file decodes the JSON of OpenAI chat-completion chunks by hand.
// encoding/json costs ~9 allocations and ~2 µs per chunk; this decoder
// reads only the fields chatpipe uses, skips the rest (id, model, created,
// logprobs, …) without allocating, and allocates only the strings it keeps
// — so a content delta costs one allocation here. FuzzChunkDecoder checks
// it against encoding/json.

// chunk is one decoded stream chunk: choice 0's delta (or message, for
// non-streamed responses), its finish reason, usage, or an error object.
type chunk struct {
	content          string
	reasoningContent string // delta.reasoning_content (DeepSeek, vLLM ≤0.8)
	reasoning        string // delta.reasoning (newer vLLM, OpenRouter, Ollama compat)
	toolCalls        []schema.ToolCall
	finishReason     string
	usage            *schema.TokenUsage
	err              *errorObject // {"error":{…}} or a top-level {"object":"error",…}
}

// errorObject is an OpenAI-style error.
type errorObject struct{ message, typ, code string }

// chunkDecoder decodes chunks, reusing its scratch buffers between calls.
// It is not safe for concurrent use; each stream has its own.
type chunkDecoder struct {
	scratch []byte // unescaped string values
	keyBuf  []byte // unescaped keys (rare)
}

var errNotObject = errors.New("not a JSON object")

// decode decodes one chunk's JSON into c, overwriting all of c.
func (d *chunkDecoder) decode(data []byte, c *chunk) error {
	*c = chunk{}
	var top errorObject
	var isErrorObject bool
	s := scanner{data: data, d: d}
	if err := s.decodeTop(c, &top, &isErrorObject, nil); err != nil {
		return err
	}
	if isErrorObject && c.err == nil {
		e := top
		c.err = &e
	}
	return nil
}

// errorBody reads the error of a rejected request: {"error":{"message":…}},
// {"error":"…"}, {"object":"error","message":…} or {"message":…}/{"detail":…}.
func (d *chunkDecoder) errorBody(body []byte) (message, typ, code string, ok bool) {
	var c chunk
	var top errorObject
	var isErrorObject bool
	var detail string
	s := scanner{data: bytes.TrimSpace(body), d: d}
	if err := s.decodeTop(&c, &top, &isErrorObject, &detail); err != nil {
		return "", "", "", false
	}
	switch {
	case c.err != nil:
		return c.err.message, c.err.typ, c.err.code, true
	case top.message != "":
		return top.message, top.typ, top.code, true
	case detail != "":
		return detail, "", "", true
	}
	return "", "", "", false
}

func (s *scanner) decodeTop(c *chunk, top *errorObject, isErrorObject *bool, detail *string) error {
	s.ws()
	if s.peek() != '{' {
		return errNotObject
	}
	s.pos++
	for first := true; ; first = false {
		key, done, err := s.nextKey(first)
		if err != nil {
			return err
		}
		if done {
			break
		}
		switch string(key) {
		case "choices":
			err = s.choices(c)
		case "usage":
			err = s.usage(c)
		case "error":
			err = s.errorValue(c)
		case "object":
			if s.peek() != '"' {
				err = s.skip()
			} else {
				var raw []byte
				if raw, _, err = s.rawString(); err == nil {
					*isErrorObject = string(raw) == "error"
				}
			}
		case "message":
			top.message, err = s.messageText()
		case "type":
			top.typ, err = s.scalarText()
		case "code":
			top.code, err = s.scalarText()
		case "detail":
			if detail != nil && s.peek() == '"' {
				*detail, err = s.str()
			} else {
				err = s.skip()
			}
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
	s.ws()
	if s.pos != len(s.data) {
		return s.syntax("trailing data")
	}
	return nil
}

func (s *scanner) choices(c *chunk) error {
	null, err := s.arrayBegin()
	if err != nil || null {
		return err
	}
	taken := false
	for first := true; ; first = false {
		done, err := s.nextElem(first)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		var ch chunk
		index, err := s.choice(&ch)
		if err != nil {
			return err
		}
		if index == 0 && !taken {
			taken = true
			c.content, c.reasoningContent, c.reasoning = ch.content, ch.reasoningContent, ch.reasoning
			c.toolCalls, c.finishReason = ch.toolCalls, ch.finishReason
		}
	}
}

// choice decodes one element of choices and returns its index.
func (s *scanner) choice(c *chunk) (index int, err error) {
	null, err := s.fields(func(key []byte) (err error) {
		switch string(key) {
		case "index":
			index, err = s.int()
		case "delta", "message":
			err = s.delta(c)
		case "finish_reason":
			c.finishReason, err = s.finishReason()
		default:
			err = s.skip()
		}
		return err
	})
	if null {
		return -1, err
	}
	return index, err
}

func (s *scanner) delta(c *chunk) error {
	_, err := s.fields(func(key []byte) (err error) {
		switch string(key) {
		case "content":
			c.content, err = s.optString()
		case "reasoning_content":
			c.reasoningContent, err = s.optString()
		case "reasoning":
			c.reasoning, err = s.optString()
		case "tool_calls":
			c.toolCalls, err = s.toolCalls()
		default:
			err = s.skip()
		}
		return err
	})
	return err
}

func (s *scanner) toolCalls() ([]schema.ToolCall, error) {
	null, err := s.arrayBegin()
	if err != nil || null {
		return nil, err
	}
	var calls []schema.ToolCall
	for first := true; ; first = false {
		done, err := s.nextElem(first)
		if err != nil {
			return nil, err
		}
		if done {
			return calls, nil
		}
		tc, err := s.toolCall(len(calls))
		if err != nil {
			return nil, err
		}
		calls = append(calls, tc)
	}
}

// toolCall decodes one tool-call delta. A call without "index" (some
// non-streaming servers) takes its position in the array.
func (s *scanner) toolCall(pos int) (schema.ToolCall, error) {
	var tc schema.ToolCall
	index := pos
	null, err := s.fields(func(key []byte) (err error) {
		switch string(key) {
		case "index":
			index, err = s.int()
		case "id":
			tc.ID, err = s.optString()
		case "type":
			var raw []byte
			var esc bool
			if s.peek() != '"' {
				err = s.skip()
			} else if raw, esc, err = s.rawString(); err == nil {
				if !esc && string(raw) == "function" {
					tc.Type = "function"
				} else {
					tc.Type = s.d.stringOf(raw, esc)
				}
			}
		case "function":
			err = s.function(&tc.Function)
		default:
			err = s.skip()
		}
		return err
	})
	if err != nil || null {
		return tc, err
	}
	tc.Index = &index
	return tc, nil
}

func (s *scanner) function(f *schema.FunctionCall) error {
	_, err := s.fields(func(key []byte) (err error) {
		switch string(key) {
		case "name":
			f.Name, err = s.optString()
		case "arguments":
			if p := s.peek(); p == '{' || p == '[' { // arguments as a JSON value, not a string
				start := s.pos
				if err = s.skip(); err == nil {
					f.Arguments = string(s.data[start:s.pos])
				}
			} else {
				f.Arguments, err = s.optString()
			}
		default:
			err = s.skip()
		}
		return err
	})
	return err
}

func (s *scanner) usage(c *chunk) error {
	u := &schema.TokenUsage{}
	null, err := s.fields(func(key []byte) (err error) {
		switch string(key) {
		case "prompt_tokens":
			u.PromptTokens, err = s.int()
		case "completion_tokens":
			u.CompletionTokens, err = s.int()
		case "total_tokens":
			u.TotalTokens, err = s.int()
		case "prompt_tokens_details":
			err = s.intField("cached_tokens", &u.PromptTokenDetails.CachedTokens)
		case "completion_tokens_details":
			err = s.intField("reasoning_tokens", &u.CompletionTokensDetails.ReasoningTokens)
		default:
			err = s.skip()
		}
		return err
	})
	if !null {
		c.usage = u
	}
	return err
}

// intField reads one integer field of an object (or null), skipping the rest.
func (s *scanner) intField(name string, dst *int) error {
	_, err := s.fields(func(key []byte) (err error) {
		if string(key) == name {
			*dst, err = s.int()
		} else {
			err = s.skip()
		}
		return err
	})
	return err
}

// errorValue reads "error": an object, a plain string, or null.
func (s *scanner) errorValue(c *chunk) error {
	switch s.peek() {
	case '"':
		msg, err := s.str()
		c.err = &errorObject{message: msg}
		return err
	case 'n':
		return s.skip()
	}
	e := &errorObject{}
	null, err := s.fields(func(key []byte) (err error) {
		switch string(key) {
		case "message":
			e.message, err = s.messageText()
		case "type":
			e.typ, err = s.scalarText()
		case "code":
			e.code, err = s.scalarText()
		default:
			err = s.skip()
		}
		return err
	})
	if !null {
		c.err = e
	}
	return err
}

// messageText reads an error message: a string, or an array of strings
// (FastAPI validation errors) joined with ", ".
func (s *scanner) messageText() (string, error) {
	if s.peek() != '[' {
		return s.scalarText()
	}
	start := s.pos
	if err := s.skip(); err != nil {
		return "", err
	}
	inner := scanner{data: s.data[start:s.pos], d: s.d}
	var parts []string
	inner.arrayBegin()
	for first := true; ; first = false {
		done, err := inner.nextElem(first)
		if err != nil || done {
			return strings.Join(parts, ", "), err
		}
		p, err := inner.scalarText()
		if err != nil {
			return "", err
		}
		parts = append(parts, p)
	}
}

// scalarText reads a string, number, boolean or null as text; objects
// and arrays become their JSON text.
func (s *scanner) scalarText() (string, error) {
	switch s.peek() {
	case '"':
		return s.str()
	case 'n':
		return "", s.skip()
	}
	start := s.pos
	if err := s.skip(); err != nil {
		return "", err
	}
	return string(s.data[start:s.pos]), nil
}

// finishReason reads finish_reason, interning the common values.
func (s *scanner) finishReason() (string, error) {
	if s.peek() != '"' {
		return "", s.skip()
	}
	raw, esc, err := s.rawString()
	if err != nil {
		return "", err
	}
	if !esc {
		switch string(raw) {
		case "stop":
			return "stop", nil
		case "length":
			return "length", nil
		case "tool_calls":
			return "tool_calls", nil
		case "content_filter":
			return "content_filter", nil
		case "function_call":
			return "function_call", nil
		}
	}
	return s.d.stringOf(raw, esc), nil
}
