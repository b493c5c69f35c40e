package llm

import (
	"bufio"
	"context"
	"errors"
	"io"
	"time"

	"github.com/cloudwego/eino/schema"
)

// producer is the one goroutine of a stream: it reads the response body,
// turns each SSE data line into a message and sends it down the pipe. It
// ends on [DONE], EOF, an error, ctx cancellation (the body read fails) or
// a closed reader (Send reports it), and then closes the body, the writer
// and the call's context, each exactly once.
type producer struct {
	ctx      context.Context // the caller's context
	cancel   context.CancelCauseFunc
	body     io.ReadCloser
	sw       *schema.StreamWriter[*schema.Message]
	host     string
	streamed bool // content, reasoning or a tool call was sent
	finished bool // a finish_reason arrived
	done     bool // [DONE] arrived: the body is complete
	drain    io.Reader
}

// maxLineBytes bounds one SSE line (a chunk that carries a large tool-call
// argument or a whole non-streamed answer).
const maxLineBytes = 16 << 20

var errLineTooLong = errors.New("stream line longer than 16 MiB")

func (p *producer) run() {
	defer p.finish()
	lr := lineReader{br: bufio.NewReaderSize(p.body, 16<<10)}
	var d chunkDecoder
	var c chunk
	for {
		line, err := lr.next()
		if payload, ok := dataPayload(line); ok {
			if string(payload) == "[DONE]" {
				p.done = true
				p.drain = lr.br
				return
			}
			if p.handle(&d, &c, payload, err != nil) {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // never wrap io.EOF: readers take it for a normal end
			}
			if !p.finished { // the answer was complete: a missing [DONE] does not matter
				p.sw.Send(nil, truncatedError(p.ctx, err, p.streamed, p.host))
			}
			return
		}
	}
}

// runWhole handles a server that answered with one JSON completion
// despite stream:true.
func (p *producer) runWhole() {
	defer p.finish()
	body, err := io.ReadAll(io.LimitReader(p.body, maxLineBytes))
	if err != nil {
		p.sw.Send(nil, truncatedError(p.ctx, err, false, p.host))
		return
	}
	var d chunkDecoder
	var c chunk
	if !p.handle(&d, &c, body, false) && !p.finished {
		p.sw.Send(nil, truncatedError(p.ctx, io.ErrUnexpectedEOF, p.streamed, p.host))
	}
}

// handle decodes and sends one data payload; it reports whether the stream
// must stop. A payload cut short by a broken connection (partial) is left
// to the truncation check.
func (p *producer) handle(d *chunkDecoder, c *chunk, payload []byte, partial bool) (stop bool) {
	if err := d.decode(payload, c); err != nil {
		if partial {
			return false
		}
		p.sw.Send(nil, &ProviderError{Host: p.host, Message: "the provider sent a malformed stream chunk", Malformed: true, Err: err})
		return true
	}
	if c.err != nil {
		p.sw.Send(nil, streamError(c.err.message, c.err.typ, c.err.code, p.host))
		return true
	}
	msg := p.message(c)
	if msg == nil {
		return false
	}
	return p.sw.Send(msg, nil)
}

// message builds the message of a chunk, or nil for a chunk that carries
// nothing (the role-only first chunk, empty deltas).
func (p *producer) message(c *chunk) *schema.Message {
	reasoning := c.reasoningContent
	if reasoning == "" {
		reasoning = c.reasoning
	}
	hasDelta := c.content != "" || reasoning != "" || len(c.toolCalls) > 0
	if !hasDelta && c.finishReason == "" && c.usage == nil {
		return nil
	}
	m := &schema.Message{Role: schema.Assistant, Content: c.content, ReasoningContent: reasoning, ToolCalls: c.toolCalls}
	if c.finishReason != "" || c.usage != nil {
		m.ResponseMeta = &schema.ResponseMeta{FinishReason: c.finishReason, Usage: c.usage}
	}
	p.streamed = p.streamed || hasDelta
	p.finished = p.finished || c.finishReason != ""
	return m
}

func (p *producer) finish() {
	if p.done && p.drain != nil {
		// Read the rest of a complete body (normally just the chunked
		// terminator, right behind [DONE]) so HTTP/1 can reuse the
		// connection: a new TLS handshake per question would add tens of
		// milliseconds to the next answer's first token. A server that
		// holds the body open after [DONE] is cut off after a second.
		guard := time.AfterFunc(time.Second, func() { p.body.Close() })
		_, _ = io.CopyN(io.Discard, p.drain, 64<<10)
		guard.Stop()
	}
	p.body.Close()
	p.sw.Close()
	p.cancel(nil)
}

// lineReader reads lines without allocating: the returned slice points
// into the bufio buffer (or a reused buffer for lines longer than it) and
// is valid until the next call.
type lineReader struct {
	br   *bufio.Reader
	long []byte
}

// next returns the next line without its "\n" or "\r\n". With a non-nil
// error, the line is what remained before the end (usually empty).
func (lr *lineReader) next() ([]byte, error) {
	line, err := lr.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = lr.br.ReadSlice('\n')
			lr.long = append(lr.long, line...)
			if len(lr.long) > maxLineBytes {
				return nil, errLineTooLong
			}
		}
		line = lr.long
	}
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
	}
	if n > 0 && line[n-1] == '\r' {
		n--
	}
	return line[:n], err
}

// dataPayload returns the value of an SSE "data:" line, with or without
// the space after the colon; other lines (comments, event:, id:, blank
// lines) are not data. Each data line is one chunk: OpenAI-compatible
// servers never split a chunk over several data lines.
func dataPayload(line []byte) ([]byte, bool) {
	if len(line) < 5 || string(line[:5]) != "data:" {
		return nil, false
	}
	p := line[5:]
	for len(p) > 0 && (p[0] == ' ' || p[0] == '\t') {
		p = p[1:]
	}
	for len(p) > 0 && (p[len(p)-1] == ' ' || p[len(p)-1] == '\t' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p, len(p) > 0
}
