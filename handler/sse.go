package handler

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/message"
	"github.com/chatpipe/chatpipe/internal/metrics"
	"github.com/chatpipe/chatpipe/internal/run"
	"github.com/chatpipe/chatpipe/internal/stream"
)

// serveStream makes the request a reader of stream id: it replays the
// events after seq `after`, then tails the live stream until it finishes
// or the client leaves. The reader never affects the generation.
//
// A finished stream with nothing left to send answers 204, which tells an
// EventSource to stop reconnecting.
//
// With a Hub, the hub serves the reader once its first frames are ready
// and the handler returns; otherwise this goroutine does, until the end.
// tied keeps the reader here: its request's end is the answer's (a
// stateless answer is stopped when its requester leaves).
func (h *Handler) serveStream(c *gin.Context, id string, after int64, tied bool) {
	t := h.openTail(c, id, after)
	if t == nil || (!tied && h.deps.Hub != nil && h.deps.Hub.take(t)) {
		return
	}
	defer t.sub.Close()
	if len(t.recs) == 0 && len(t.pending) == 0 && t.w.flush() != nil {
		return // answer with the headers now, not at the next event; the client is gone
	}
	t.follow()
}

// streamTail is one reader of a stream between two wake-ups. Every live
// stream's handler goroutine rests in follow's select for as long as the
// answer lasts, so the state lives here rather than in large stack frames
// and the rare paths (replay errors, pending approvals, logging) are
// separate calls: the GC shrinks a resting stack to a quarter of what it
// holds, and one resting below 4 KiB takes half the memory of one above.
type streamTail struct {
	h    *Handler
	c    *gin.Context
	id   string
	sub  stream.Subscription
	w    *sseWriter
	recs []stream.Record
	done bool
	// pending are approval requests still open, re-sent to a resuming
	// reader once the gap up to gapEnd has gone out.
	pending []stream.Record
	gapEnd  int64
}

// openTail subscribes and answers what needs no tail (an unknown, expired
// or finished stream); otherwise it returns the reader, whose sub the
// caller closes.
func (h *Handler) openTail(c *gin.Context, id string, after int64) *streamTail {
	sub, err := h.deps.Streams.Subscribe(c.Request.Context(), id, after)
	switch {
	case errors.Is(err, stream.ErrNotFound):
		h.streamGone(c, id)
		return nil
	case errors.Is(err, stream.ErrExpired), errors.Is(err, stream.ErrUnavailable):
		// The window is gone, or the shared store cannot be reached from
		// here: the client reloads the saved message instead.
		h.sendResync(c, id)
		return nil
	case err != nil:
		h.internal(c, "subscribe to stream", err)
		return nil
	}
	t := &streamTail{h: h, c: c, id: id, sub: sub}
	// Sized for a live tail (a few records a wake-up); a replay grows it.
	t.recs, t.done, err = sub.Fetch(make([]stream.Record, 0, 8))
	switch {
	case errors.Is(err, stream.ErrExpired):
		h.sendResync(c, id)
	case err != nil:
		h.internal(c, "read stream", err)
	case t.done && len(t.recs) == 0:
		c.Status(http.StatusNoContent)
	default:
		t.start(after)
		return t
	}
	sub.Close()
	return nil
}

// start prepares the response (nothing is written yet) and finds the
// approvals a resuming reader must be asked again.
func (t *streamTail) start(after int64) {
	t.w = newSSEWriter(t.c, t.h.cfg().Server.WriteTimeout)
	t.w.metrics = t.h.deps.Metrics
	// A reader resuming past a tool call's approval request that is still
	// open is asked again (it may have lost its state) — after the gap it
	// missed, which may decide it or hold requests of its own, and before
	// the live tail: gap, then what is still pending, then live.
	if after > 0 && !t.done {
		var err error
		t.pending, t.gapEnd, err = run.StillPending(t.c.Request.Context(), t.h.deps.Streams, t.id, after)
		if err != nil {
			t.h.reqLog(t.c).Warn("finding pending approvals failed", zap.String("stream_id", t.id), zap.Error(err))
		}
	}
}

// follow writes what was fetched and waits for more, until the stream
// ends or the client leaves.
func (t *streamTail) follow() {
	ctx := t.c.Request.Context()
	heartbeat := time.NewTicker(t.h.cfg().Stream.Heartbeat)
	defer heartbeat.Stop()
	for {
		if !t.send() || t.done {
			return
		}
		if len(t.recs) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-heartbeat.C:
				if t.w.ping() != nil {
					return
				}
			case <-t.sub.Ready():
			}
		}
		if !t.fetch() {
			return
		}
	}
}

// send writes the records fetched, then the pending approval requests
// once the gap before them is out; false when the client is gone or
// stalled past the write timeout.
func (t *streamTail) send() bool {
	if len(t.recs) > 0 && t.w.records(t.recs) != nil {
		return false
	}
	if t.pending != nil && (len(t.recs) == 0 || t.recs[len(t.recs)-1].Seq >= t.gapEnd) {
		t.w.again(t.pending)
		t.pending = nil
		return t.w.flush() == nil
	}
	return true
}

// fetch reads what the stream holds past the last record sent; false
// when this reader must stop.
func (t *streamTail) fetch() bool {
	var err error
	t.recs, t.done, err = t.sub.Fetch(t.recs[:0])
	switch {
	case errors.Is(err, stream.ErrExpired):
		// This reader fell behind the retained window.
		_ = t.w.resync(t.id)
		return false
	case err != nil:
		t.h.reqLog(t.c).Warn("stream read ended", zap.String("stream_id", t.id), zap.Error(err))
		return false
	}
	return true
}

// streamGone answers for a stream the store no longer holds: if its
// message exists the replay window is gone (resync from the saved
// message); otherwise the id is unknown.
func (h *Handler) streamGone(c *gin.Context, id string) {
	if m, err := h.deps.History.GetMessage(c.Request.Context(), id); err == nil && m.Role == history.RoleAssistant {
		h.sendResync(c, id)
		return
	}
	abort(c, http.StatusNotFound, "stream_not_found", "No stream with id "+strconv.Quote(id)+".")
}

func (h *Handler) sendResync(c *gin.Context, id string) {
	w := newSSEWriter(c, h.cfg().Server.WriteTimeout)
	_ = w.resync(id)
}

// sseWriter writes SSE frames with one write and one flush per batch, and
// a write deadline kept about the write timeout ahead of each batch
// (writeDeadline): a client that stops reading is cut after the write
// timeout instead of holding the connection forever, while a stream may
// last as long as it needs. Its buffer starts at a live
// tail's batch (a frame or two) and grows for a replay: every live stream
// holds one.
type sseWriter struct {
	c        *gin.Context
	rc       *http.ResponseController
	deadline writeDeadline
	buf      []byte
	metrics  *metrics.Metrics // nil = not counted
	events   int              // records in buf, for the metrics
}

func newSSEWriter(c *gin.Context, timeout time.Duration) *sseWriter {
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	rc := http.NewResponseController(c.Writer)
	w := &sseWriter{c: c, rc: rc, deadline: writeDeadline{rc: rc, timeout: timeout}, buf: make([]byte, 0, 512)}
	liftBodyDeadline(w.rc)
	// Ask EventSource to reconnect quickly after a dropped connection.
	w.buf = append(w.buf, "retry: 1000\n\n"...)
	return w
}

// records writes a batch of stored events: id, event and data lines.
func (w *sseWriter) records(recs []stream.Record) error {
	w.buf = appendRecords(w.buf, recs)
	w.events += len(recs)
	return w.flush()
}

// appendRecords appends the SSE frames of stored events.
func appendRecords(dst []byte, recs []stream.Record) []byte {
	for _, r := range recs {
		dst = append(dst, "id: "...)
		dst = strconv.AppendInt(dst, r.Seq, 10)
		dst = append(dst, "\nevent: "...)
		dst = append(dst, r.Type...)
		dst = append(dst, "\ndata: "...)
		dst = append(dst, r.Data...)
		dst = append(dst, "\n\n"...)
	}
	return dst
}

// again adds events sent before, as stored but without their id line, so
// the client's Last-Event-ID is left as it was (pending approval requests
// re-sent to a resuming reader). Written with the next flush.
func (w *sseWriter) again(recs []stream.Record) {
	for _, r := range recs {
		w.buf = append(w.buf, "event: "...)
		w.buf = append(w.buf, r.Type...)
		w.buf = append(w.buf, "\ndata: "...)
		w.buf = append(w.buf, r.Data...)
		w.buf = append(w.buf, "\n\n"...)
	}
}

func (w *sseWriter) ping() error {
	w.buf = append(w.buf, ": ping\n\n"...)
	return w.flush()
}

// resync tells the reader its replay window is gone; it carries no id so
// the client's Last-Event-ID is left as it was.
func (w *sseWriter) resync(id string) error {
	w.buf = appendResync(w.buf, id)
	return w.flush()
}

// appendResync appends the frame that tells a reader its replay window
// is gone.
func appendResync(dst []byte, id string) []byte {
	dst = append(dst, "event: resync_required\ndata: "...)
	dst = append(dst, `{"type":"resync_required","stream_id":`...)
	dst = eventbus.AppendString(dst, id)
	dst = append(dst, `,"message_id":`...)
	dst = eventbus.AppendString(dst, id)
	return append(dst, "}\n\n"...)
}

func (w *sseWriter) flush() error {
	w.deadline.renew()
	n, err := w.c.Writer.Write(w.buf)
	if w.metrics != nil {
		w.metrics.SSEWritten(w.events, n)
	}
	w.events = 0
	w.buf = w.buf[:0]
	if err != nil {
		return err
	}
	return w.rc.Flush()
}

// answer sends a started generation to its requester: as the SSE stream,
// or (streaming false) as the finished message gathered from that same
// stream. tied: see serveStream.
func (h *Handler) answer(c *gin.Context, streamID string, streaming, tied bool) {
	c.Header("X-Message-Id", streamID)
	if streaming {
		h.serveStream(c, streamID, 0, tied)
		return
	}
	h.answerWhole(c, streamID)
}

// answerWhole sends the finished message; apart from answer so that the
// frame a streamed answer rests under stays small.
func (h *Handler) answerWhole(c *gin.Context, streamID string) {
	sub, err := h.deps.Streams.Subscribe(c.Request.Context(), streamID, 0)
	if err != nil {
		h.internal(c, "subscribe to stream", err)
		return
	}
	defer sub.Close()
	msg, err := gather(c.Request.Context(), sub)
	if err != nil {
		h.internal(c, "gather answer", err)
		return
	}
	renewWriteDeadline(c, h.cfg().Server.WriteTimeout) // the answer may have taken longer than one write may
	if saved, ok := h.savedMessage(c, msg.ID); ok && saved.Status == msg.Status {
		c.JSON(http.StatusOK, saved) // with its place in the tree, model and record
		return
	}
	c.JSON(http.StatusOK, msg)
}

// gather reads a whole stream and builds the message it produced: the
// non-streaming answer is the streaming one, consumed here through the
// same fold the run saves the message with.
func gather(ctx context.Context, sub stream.Subscription) (MessageJSON, error) {
	var (
		fold message.Fold
		recs []stream.Record
	)
	for {
		var done bool
		var err error
		recs, done, err = sub.Fetch(recs[:0])
		if err != nil {
			return MessageJSON{}, err
		}
		for _, r := range recs {
			ev, err := eventbus.Decode(r.Data)
			if err != nil {
				return MessageJSON{}, err
			}
			fold.Add(&ev)
		}
		if done {
			return gathered(&fold), nil
		}
		if len(recs) == 0 {
			select {
			case <-ctx.Done():
				return MessageJSON{}, ctx.Err()
			case <-sub.Ready():
			}
		}
	}
}

// gathered is the message a whole stream folded into.
func gathered(f *message.Fold) MessageJSON {
	msg := MessageJSON{Role: "assistant", Content: f.Content(), Thinking: f.Thinking(), Status: f.Status(),
		References: f.References(), Usage: f.Usage()}
	if started, at := f.Started(); started != nil {
		msg.ID, msg.SiblingIDs = started.MessageID, []string{started.MessageID}
		msg.CreatedAt = time.UnixMilli(at).UTC().Format(time.RFC3339Nano)
	}
	if msg.References == nil {
		msg.References = []eventbus.Reference{}
	}
	if msg.Status == eventbus.StatusFailed {
		msg.Error = f.ErrorMessage()
	}
	return msg
}
