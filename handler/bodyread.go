package handler

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"
)

// limitBodyRead gives a request's body server.body_read_timeout to arrive,
// counted from when its headers were read: a client that declares a large
// Content-Length and trickles a byte now and then no longer holds a
// connection for ever. The deadline is on the connection's reads, so it is
// lifted as soon as the body has been read to its end: an answer streamed
// for minutes afterwards (SSE) is not affected, and net/http's watch for a
// client that goes away keeps working. Requests without a body get no
// deadline at all.
func (h *Handler) limitBodyRead(c *gin.Context) {
	timeout := h.cfg().Server.BodyReadTimeout
	body := c.Request.Body
	if timeout <= 0 || body == nil || body == http.NoBody || c.Request.ContentLength == 0 {
		return
	}
	rc := http.NewResponseController(c.Writer)
	if err := rc.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return // not a connection we can set deadlines on (e.g. a test recorder)
	}
	c.Request.Body = &deadlineBody{ReadCloser: body, rc: rc}
}

// deadlineBody lifts the read deadline when the body has been read whole.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// bodyTimedOut reports whether err is a body read cut by the deadline.
func bodyTimedOut(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// liftBodyDeadline removes the body read deadline before a long-lived
// response (SSE) starts, whether or not the handler read its body to the
// end: net/http reads what is left when the headers go out and then
// watches the connection for the client leaving, which a passed deadline
// would end as if the client had left.
func liftBodyDeadline(rc *http.ResponseController) { _ = rc.SetReadDeadline(time.Time{}) }
