package handler

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/run"
	"github.com/chatpipe/chatpipe/internal/stream"
)

// follow reads the run's stream into b until it finishes. After each batch
// of events it calls emit (if set); while nothing arrives, idle on each
// heartbeat tick. It returns ctx's error when the client has gone.
func follow(ctx context.Context, sub stream.Subscription, b *completionBuilder, heartbeat <-chan time.Time,
	emit, idle func() error) error {
	var recs []stream.Record
	for {
		var done bool
		var err error
		recs, done, err = sub.Fetch(recs[:0])
		if err != nil {
			return err
		}
		if err := b.applyRecords(recs); err != nil {
			return err
		}
		if emit != nil && len(recs) > 0 {
			if err := emit(); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
		if len(recs) == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-heartbeat:
				if idle != nil {
					if err := idle(); err != nil {
						return err
					}
				}
			case <-sub.Ready():
			}
		}
	}
}

// applyRecords folds recs into b; apart from follow, whose frame a
// streamed completion waits under.
func (b *completionBuilder) applyRecords(recs []stream.Record) error {
	for _, rec := range recs {
		ev, err := eventbus.Decode(rec.Data)
		if err != nil {
			return err
		}
		b.apply(ev)
	}
	return nil
}

// streamCompletion answers with chat.completion.chunk frames. The HTTP
// status is held back until there is something to send, so a run that
// fails before its first token is answered with an error status; after
// that, an error object frame then [DONE]. A client that goes away stops
// the run: nothing is saved, so nobody could read the rest.
func (h *Handler) streamCompletion(c *gin.Context, r *run.Run, b *completionBuilder, includeUsage bool) {
	sub, s := h.openCompletion(c, r, b)
	if sub == nil {
		return
	}
	defer sub.Close()
	heartbeat := time.NewTicker(h.cfg().Stream.Heartbeat)
	defer heartbeat.Stop()
	err := follow(c.Request.Context(), sub, b, heartbeat.C, s.emit, s.idle)
	h.endCompletion(c, r, s, err, includeUsage)
}

// openCompletion subscribes to the run's stream and makes the completion's
// writer; sub is nil when it answered an error.
func (h *Handler) openCompletion(c *gin.Context, r *run.Run, b *completionBuilder) (stream.Subscription, *completionStream) {
	sub, err := h.deps.Streams.Subscribe(c.Request.Context(), r.StreamID, 0)
	if err != nil {
		h.deps.Runs.Stop(r.StreamID)
		h.reqLog(c).Error("subscribe to completion stream failed", zap.Error(err))
		openAIAbort(c, http.StatusInternalServerError, "internal_error", "", "Something went wrong on the server; please try again.")
		return nil, nil
	}
	rc := http.NewResponseController(c.Writer)
	w := &chunkWriter{c: c, rc: rc, deadline: writeDeadline{rc: rc, timeout: h.cfg().Server.WriteTimeout}}
	liftBodyDeadline(w.rc)
	return sub, &completionStream{w: w, b: b}
}

// completionStream is a streamed completion's writer and builder. The
// handler goroutine waits in follow for as long as the answer lasts, so
// the frames under it stay small: the frames are built in these methods
// and in endCompletion (see streamTail).
type completionStream struct {
	w *chunkWriter
	b *completionBuilder
}

// start commits the response and sends the assistant's role, once.
func (s *completionStream) start() {
	if !s.w.committed {
		s.w.commit()
		s.w.data(s.b.chunk(openAIDelta{Role: "assistant", Content: new("")}, nil))
	}
}

// emit sends the deltas gathered since the last batch.
func (s *completionStream) emit() error {
	if len(s.b.pending) == 0 {
		return nil
	}
	s.start()
	for _, p := range s.b.pending {
		d := openAIDelta{Content: new(p.text)}
		if p.reasoning {
			d = openAIDelta{ReasoningContent: new(p.text)}
		}
		s.w.data(s.b.chunk(d, nil))
	}
	s.b.pending = s.b.pending[:0]
	return s.w.flush()
}

// idle answers a heartbeat: a long search must not leave the client
// without a byte.
func (s *completionStream) idle() error {
	s.start()
	s.w.buf = append(s.w.buf, ": ping\n\n"...)
	return s.w.flush()
}

// endCompletion sends the end of a streamed completion that follow ended
// with err.
func (h *Handler) endCompletion(c *gin.Context, r *run.Run, s *completionStream, err error, includeUsage bool) {
	w, b := s.w, s.b
	if err != nil {
		h.deps.Runs.Stop(r.StreamID)
		if c.Request.Context().Err() != nil {
			return // the client left
		}
		// The reader fell behind the stream's replay window, or the store failed.
		h.reqLog(c).Warn("completion stream ended early", zap.String("stream_id", r.StreamID), zap.Error(err))
		body := newOpenAIError("server_error", "stream_lost", "", "The answer could not be delivered; please try again.")
		if !w.committed {
			c.AbortWithStatusJSON(http.StatusInternalServerError, body)
			return
		}
		w.data(body)
		w.buf = append(w.buf, "data: [DONE]\n\n"...)
		_ = w.flush()
		return
	}
	if err := s.emit(); err != nil {
		return
	}
	finish := b.finishReason()
	if finish == "" {
		status, body := b.failure()
		if !w.committed {
			c.AbortWithStatusJSON(status, body)
			return
		}
		w.data(body)
	} else {
		s.start()
		last := b.chunk(openAIDelta{}, &finish)
		last.Chatpipe = b.extension()
		w.data(last)
		if includeUsage {
			u := b.openAIUsage()
			w.data(openAIChunk{ID: b.id, Object: "chat.completion.chunk", Created: b.created, Model: b.model,
				Choices: []openAIChunkChoice{}, Usage: &u})
		}
	}
	w.buf = append(w.buf, "data: [DONE]\n\n"...)
	_ = w.flush()
}

// wholeCompletion answers with one chat.completion object once the run
// has finished. A client that goes away stops the run.
func (h *Handler) wholeCompletion(c *gin.Context, r *run.Run, b *completionBuilder) {
	ctx := c.Request.Context()
	sub, err := h.deps.Streams.Subscribe(ctx, r.StreamID, 0)
	if err == nil {
		err = follow(ctx, sub, b, nil, nil, nil)
		sub.Close()
	}
	if err != nil {
		h.deps.Runs.Stop(r.StreamID)
		if ctx.Err() == nil {
			h.reqLog(c).Error("reading a completion failed", zap.String("stream_id", r.StreamID), zap.Error(err))
			openAIAbort(c, http.StatusInternalServerError, "internal_error", "", "Something went wrong on the server; please try again.")
		}
		return
	}
	renewWriteDeadline(c, h.cfg().Server.WriteTimeout)
	finish := b.finishReason()
	if finish == "" {
		status, body := b.failure()
		c.AbortWithStatusJSON(status, body)
		return
	}
	msg := openAIMessageOut{Role: "assistant", Content: b.content()}
	if r := b.reasoning(); r != "" {
		msg.ReasoningContent = new(r)
	}
	c.JSON(http.StatusOK, openAICompletion{
		ID: b.id, Object: "chat.completion", Created: b.created, Model: b.model,
		Choices: []openAIChoice{{Message: msg, FinishReason: finish}},
		Usage:   b.openAIUsage(), Chatpipe: b.extension(),
	})
}

// chunkWriter writes "data:" frames with one write and flush per batch and
// a write deadline kept ahead of every write, like sseWriter.
type chunkWriter struct {
	c         *gin.Context
	rc        *http.ResponseController
	deadline  writeDeadline
	buf       []byte
	committed bool
}

func (w *chunkWriter) commit() {
	h := w.c.Writer.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.c.Status(http.StatusOK)
	w.committed = true
}

func (w *chunkWriter) data(v any) {
	body, err := json.Marshal(v)
	if err != nil { // our own structs: cannot happen
		panic(err)
	}
	w.buf = append(w.buf, "data: "...)
	w.buf = append(w.buf, body...)
	w.buf = append(w.buf, "\n\n"...)
}

func (w *chunkWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	w.deadline.renew()
	_, err := w.c.Writer.Write(w.buf)
	w.buf = w.buf[:0]
	if err != nil {
		return err
	}
	return w.rc.Flush()
}

// renewWriteDeadline gives a response that waited for a whole answer the
// full write timeout from now: the server's deadline counts from the
// request, and an answer may take longer than that to generate.
func renewWriteDeadline(c *gin.Context, timeout time.Duration) {
	if timeout > 0 {
		_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(timeout))
	}
}
