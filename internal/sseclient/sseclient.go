// Package sseclient reads Server-Sent Events frames the way a browser's
// EventSource does (id, event, data, comments, CRLF), for tests,
// benchmarks and the load command. It is not on the server's path.
package sseclient

import (
	"bufio"

	"io"
	"strings"
)

// Frame is one dispatched event, or a comment line.
type Frame struct {
	ID      string // "" when the frame had no id line
	HasID   bool
	Event   string // "message" when the frame had no event line
	Data    string // data lines joined with "\n"
	Comment string // set for a ": ping" style comment (no event)
	Retry   string
}

// Reader parses frames from a stream.
type Reader struct {
	br *bufio.Reader
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader) *Reader { return &Reader{br: bufio.NewReaderSize(r, 64<<10)} }

// Next returns the next frame or comment; io.EOF at a clean end, or the
// read error (io.ErrUnexpectedEOF when the stream stopped mid-frame).
func (r *Reader) Next() (Frame, error) {
	var f Frame
	var data []string
	any := false
	for {
		line, err := r.br.ReadString('\n')
		if err != nil {
			if err == io.EOF && (any || line != "") {
				return f, io.ErrUnexpectedEOF
			}
			return f, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if !any {
				continue
			}
			if f.Event == "" && data == nil && f.Comment != "" {
				return f, nil
			}
			if f.Event == "" {
				f.Event = "message"
			}
			f.Data = strings.Join(data, "\n")
			return f, nil
		}
		any = true
		if strings.HasPrefix(line, ":") {
			f.Comment = strings.TrimSpace(line[1:])
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			f.ID, f.HasID = value, true
		case "event":
			f.Event = value
		case "data":
			data = append(data, value)
		case "retry":
			f.Retry = value
		}
	}
}

// ReadAll reads frames until the stream ends, skipping comments and retry
// hints, and reports how it ended (nil for a clean EOF).
func ReadAll(r io.Reader) ([]Frame, error) {
	rd := NewReader(r)
	var out []Frame
	for {
		f, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if f.Comment != "" && f.Data == "" && f.Event == "" || (f.Retry != "" && f.Data == "" && !f.HasID) {
			continue
		}
		out = append(out, f)
	}
}

// IsComment reports whether f is a comment-only frame such as ": ping".
func (f Frame) IsComment() bool { return f.Comment != "" && f.Data == "" && !f.HasID && f.Event == "" }
