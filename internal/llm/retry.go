package llm

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"

	"github.com/chatpipe/chatpipe/internal/chatmodel"
)

// Backoff between attempts: 200ms, 400ms, … capped at 2s; a provider's
// Retry-After is honoured up to 5s (longer waits fail fast instead of
// holding the user's request).
const (
	firstBackoff  = 200 * time.Millisecond
	maxBackoff    = 2 * time.Second
	maxRetryAfter = 5 * time.Second
)

// StreamWithRetry starts a streamed call of m and reads its first chunk.
// A call that fails before producing a chunk with a retryable error is
// retried up to m.Retries more times with exponential backoff; nothing is
// retried once a chunk has arrived, since the user may have seen it.
//
// On success it returns the first chunk and the reader positioned after it
// (first == nil means the stream was empty); the caller closes sr. On
// error sr is nil. attempts counts the calls made.
func StreamWithRetry(ctx context.Context, m *chatmodel.Model, msgs []*schema.Message,
	opts ...model.Option) (first *schema.Message, sr *schema.StreamReader[*schema.Message], attempts int, err error) {
	if m == nil || m.Model == nil {
		return nil, nil, 0, errors.New("llm: no chat model")
	}
	callOpts := append(m.Options[:len(m.Options):len(m.Options)], opts...)
	for {
		attempts++
		first, sr, err = startStream(ctx, m.Model, msgs, callOpts)
		if err == nil {
			return first, sr, attempts, nil
		}
		if attempts > m.Retries || !IsRetryable(err) {
			return nil, nil, attempts, err
		}
		// A retry was due: a cancelled ctx is now the reason to stop.
		if werr := sleepCtx(ctx, retryDelay(attempts, err)); werr != nil {
			return nil, nil, attempts, werr
		}
	}
}

// startStream makes one call and reads its first chunk; on error the
// reader is already closed.
func startStream(ctx context.Context, cm model.BaseChatModel, msgs []*schema.Message,
	opts []model.Option) (*schema.Message, *schema.StreamReader[*schema.Message], error) {
	sr, err := cm.Stream(ctx, msgs, opts...)
	if err != nil {
		return nil, nil, err
	}
	first, err := sr.Recv()
	if errors.Is(err, io.EOF) {
		return nil, sr, nil
	}
	if err != nil {
		sr.Close()
		return nil, nil, err
	}
	return first, sr, nil
}

// retryDelay is the wait before the attempt after attempt n (1-based).
func retryDelay(n int, err error) time.Duration {
	d := firstBackoff << (n - 1)
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	var pe *ProviderError
	if errors.As(err, &pe) && pe.RetryAfter > d {
		d = min(pe.RetryAfter, maxRetryAfter)
	}
	return d
}

// sleepCtx waits d or until ctx ends, whichever is first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
