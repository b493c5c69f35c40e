package eventbus

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the one-line JSON object of ev to dst: the envelope
// fields (seq, type, stream_id, ts, placement) followed by the payload's
// fields. Text events are encoded by hand because they are the per-token
// hot path; other payloads go through encoding/json.
func AppendJSON(dst []byte, ev *Event) ([]byte, error) {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, ev.Seq, 10)
	dst = append(dst, `,"type":`...)
	dst = AppendString(dst, string(ev.Type))
	dst = append(dst, `,"stream_id":`...)
	dst = AppendString(dst, ev.StreamID)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, ev.Time, 10)
	if ev.Placement != nil {
		p, err := json.Marshal(ev.Placement)
		if err != nil {
			return dst, fmt.Errorf("eventbus: encode placement: %w", err)
		}
		dst = append(dst, `,"placement":`...)
		dst = append(dst, p...)
	}
	if ev.Type.IsText() {
		if ev.Text != "" || ev.Type == TypeThinkingDelta || ev.Type == TypeAnswerDelta {
			dst = append(dst, `,"content":`...)
			dst = AppendString(dst, ev.Text)
		}
		return append(dst, '}'), nil
	}
	if ev.Payload == nil {
		return append(dst, '}'), nil
	}
	var v any = ev.Payload
	if c, ok := ev.Payload.(Custom); ok {
		v = c.Value
	}
	body, err := json.Marshal(v)
	if err != nil {
		return dst, fmt.Errorf("eventbus: encode %s payload: %w", ev.Type, err)
	}
	if len(body) < 2 || body[0] != '{' {
		return dst, fmt.Errorf("eventbus: %s payload must encode to a JSON object", ev.Type)
	}
	if len(body) > 2 { // not "{}"
		dst = append(dst, ',')
		dst = append(dst, body[1:len(body)-1]...)
	}
	return append(dst, '}'), nil
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string literal, escaping like
// encoding/json does (control characters, quotes, backslashes, U+2028 and
// U+2029; invalid UTF-8 becomes U+FFFD) but without allocating.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// envelope is the decoded form of any event object.
type envelope struct {
	Seq       int64      `json:"seq"`
	Type      Type       `json:"type"`
	StreamID  string     `json:"stream_id"`
	TS        int64      `json:"ts"`
	Placement *Placement `json:"placement"`
	Content   string     `json:"content"`
}

// Decode parses one event object produced by AppendJSON. Built-in payloads
// decode into their types; unknown types decode into Custom{map[string]any}.
func Decode(data []byte) (Event, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return Event{}, fmt.Errorf("eventbus: decode event: %w", err)
	}
	ev := Event{Type: env.Type, Seq: env.Seq, StreamID: env.StreamID, Time: env.TS, Placement: env.Placement}
	if env.Type.IsText() {
		ev.Text = env.Content
		return ev, nil
	}
	var err error
	switch env.Type {
	case TypeStreamStarted:
		ev.Payload, err = decodeAs[StreamStarted](data)
	case TypeStage:
		ev.Payload, err = decodeAs[Stage](data)
	case TypeQueryRewritten:
		ev.Payload, err = decodeAs[QueryRewritten](data)
	case TypeReferences:
		ev.Payload, err = decodeAs[References](data)
	case TypeToolCallStart, TypeToolCallDelta, TypeToolCallEnd:
		ev.Payload, err = decodeAs[ToolCall](data)
	case TypeToolResult:
		ev.Payload, err = decodeAs[ToolResult](data)
	case TypeToolCallApprovalRequest, TypeToolCallApprovalDecision:
		ev.Payload, err = decodeAs[ToolApproval](data)
	case TypeUsage:
		ev.Payload, err = decodeAs[Usage](data)
	case TypeError:
		ev.Payload, err = decodeAs[Error](data)
	case TypeStreamFinished:
		ev.Payload, err = decodeAs[Finished](data)
	case TypeSessionUpdated:
		ev.Payload, err = decodeAs[SessionUpdated](data)
	case TypeHistoryCompacted:
		ev.Payload, err = decodeAs[HistoryCompacted](data)
	case TypeResyncRequired:
	default:
		var m map[string]any
		err = json.Unmarshal(data, &m)
		for _, k := range []string{"seq", "type", "stream_id", "ts", "placement"} {
			delete(m, k)
		}
		ev.Payload = Custom{Value: m}
	}
	if err != nil {
		return Event{}, fmt.Errorf("eventbus: decode %s: %w", env.Type, err)
	}
	return ev, nil
}

func decodeAs[T Payload](data []byte) (Payload, error) {
	var p T
	err := json.Unmarshal(data, &p)
	return p, err
}
