package providertest

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"
)

// dialect renders a script's parts in one provider's wire format.
type dialect interface {
	contentType() string
	errorBody(status int, e ErrorObject) []byte
	preamble(model string) []byte // before the first chunk; nil for none
	chunk(model string, c Chunk) []byte
	streamError(e ErrorObject) []byte
	// end renders what follows the chunks of a complete stream.
	end(model string, sc Script) []byte
}

// player plays one script on one response. Every wait also ends when the
// client goes away (counted as an abort) or the server closes.
type player struct {
	s       *Server
	w       http.ResponseWriter
	rc      *http.ResponseController
	ctx     context.Context
	d       dialect
	model   string
	aborted bool
}

func (p *player) play(sc Script) {
	if sc.HoldHeaders != nil && !p.hold(sc.HoldHeaders) {
		return
	}
	for k, v := range sc.Header {
		p.w.Header().Set(k, v)
	}
	if sc.Status != 0 && sc.Status != http.StatusOK {
		p.fail(sc)
		return
	}
	if p.w.Header().Get("Content-Type") == "" {
		p.w.Header().Set("Content-Type", p.d.contentType())
	}
	p.w.Header().Set("Cache-Control", "no-cache")
	p.w.WriteHeader(http.StatusOK)
	if !p.flush() {
		return
	}
	if sc.Raw != nil {
		p.playRaw(sc)
		return
	}
	if b := p.d.preamble(p.model); b != nil && !sc.NoRolePreamble && !p.write(b) {
		return
	}
	errAt := -1
	if sc.MidStreamError != nil {
		errAt = min(max(sc.MidStreamError.After, 0), len(sc.Chunks))
	}
	for i := 0; ; i++ {
		if sc.Hold != nil && i == sc.HoldAfter && !p.hold(sc.Hold) {
			return
		}
		if i == errAt {
			p.write(p.d.streamError(sc.MidStreamError.ErrorObject))
			return
		}
		if i == len(sc.Chunks) {
			break
		}
		if i > 0 && !p.sleep(sc.Delay) {
			return
		}
		if !p.write(p.d.chunk(p.model, sc.Chunks[i])) {
			return
		}
		p.s.event(func() { p.s.chunks++ })
	}
	if sc.Drop {
		p.drop()
		return
	}
	p.write(p.d.end(p.model, sc))
}

func (p *player) playRaw(sc Script) {
	for i := 0; ; i++ {
		if sc.Hold != nil && i == sc.HoldAfter && !p.hold(sc.Hold) {
			return
		}
		if i == len(sc.Raw) {
			break
		}
		if i > 0 && !p.sleep(sc.Delay) {
			return
		}
		if !p.writeString(sc.Raw[i]) {
			return
		}
		p.s.event(func() { p.s.chunks++ })
	}
	if sc.Drop {
		p.drop()
	}
}

// fail sends the error response of a rejected request.
func (p *player) fail(sc Script) {
	body := []byte(sc.ErrorBody)
	if sc.ErrorBody == "" {
		p.w.Header().Set("Content-Type", "application/json")
		e := sc.Error
		if e.Message == "" {
			e.Message = http.StatusText(sc.Status)
		}
		body = p.d.errorBody(sc.Status, e)
	}
	p.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	p.w.WriteHeader(sc.Status)
	p.w.Write(body)
}

// write writes and flushes b; false when the client is gone.
func (p *player) write(b []byte) bool {
	if _, err := p.w.Write(b); err != nil {
		p.abort()
		return false
	}
	return p.flush()
}

func (p *player) writeString(s string) bool {
	if _, err := io.WriteString(p.w, s); err != nil {
		p.abort()
		return false
	}
	return p.flush()
}

func (p *player) flush() bool {
	if err := p.rc.Flush(); err != nil {
		p.abort()
		return false
	}
	return true
}

func (p *player) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.ctx.Done():
		p.abort()
		return false
	case <-p.s.closing:
		return false
	}
}

func (p *player) hold(g *Gate) bool {
	g.arrive()
	select {
	case <-g.release:
		return true
	case <-p.ctx.Done():
		p.abort()
		return false
	case <-p.s.closing:
		return false
	}
}

// drop closes the connection without ending the response.
func (p *player) drop() {
	conn, buf, err := p.rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // closes the connection just as abruptly
	}
	buf.Flush()
	conn.Close()
}

func (p *player) abort() {
	if !p.aborted {
		p.aborted = true
		p.s.event(func() { p.s.aborts++ })
	}
}
