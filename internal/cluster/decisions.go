package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// A user's decision on a tool call (an approval) may be posted to any
// replica, while the generation waiting for it runs on one. Decisions
// travel like stops: by pub/sub for speed, and by a key the generating
// replica reads at each lease renewal while calls wait, so a decision
// survives a missed message.

func (c *Coordinator) decisionChannel() string { return c.opts.Prefix + "decision" }

func (c *Coordinator) decisionKey(streamID, toolCallID string) string {
	return c.opts.Prefix + "decision:" + streamID + ":" + toolCallID
}

// decisionMsg is a decision on the pub/sub channel.
type decisionMsg struct {
	Stream   string `json:"s"`
	Call     string `json:"c"`
	Decision string `json:"d"`
}

// decisionWaits are a lease's tool calls waiting for a decision, and where
// decisions go.
type decisionWaits struct {
	mu       sync.Mutex
	handler  func(toolCallID, decision string)
	awaiting map[string]bool
}

// OnDecision sets where decisions on this generation's tool calls arrive
// (each at most once per call while it is awaited).
func (l *Lease) OnDecision(f func(toolCallID, decision string)) {
	l.waits.mu.Lock()
	defer l.waits.mu.Unlock()
	l.waits.handler = f
}

// AwaitDecision marks a tool call as waiting for a decision, so that its
// key is read at each renewal.
func (l *Lease) AwaitDecision(toolCallID string) {
	l.waits.mu.Lock()
	defer l.waits.mu.Unlock()
	if l.waits.awaiting == nil {
		l.waits.awaiting = map[string]bool{}
	}
	l.waits.awaiting[toolCallID] = true
}

// ForgetDecision ends the wait for a tool call's decision.
func (l *Lease) ForgetDecision(toolCallID string) {
	l.waits.mu.Lock()
	defer l.waits.mu.Unlock()
	delete(l.waits.awaiting, toolCallID)
}

// deliver hands a decision to the handler if the call still waits.
func (l *Lease) deliver(toolCallID, decision string) bool {
	l.waits.mu.Lock()
	h, waiting := l.waits.handler, l.waits.awaiting[toolCallID]
	delete(l.waits.awaiting, toolCallID)
	l.waits.mu.Unlock()
	if !waiting || h == nil {
		return false
	}
	h(toolCallID, decision)
	return true
}

// pollDecisions reads the keys of awaited calls, for decisions whose
// pub/sub message was missed.
func (l *Lease) pollDecisions() {
	l.waits.mu.Lock()
	ids := make([]string, 0, len(l.waits.awaiting))
	for id := range l.waits.awaiting {
		ids = append(ids, id)
	}
	l.waits.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	c := l.c
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = c.decisionKey(l.streamID, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.LeaseTTL/3)
	defer cancel()
	vals, err := c.opts.Client.MGet(ctx, keys...).Result()
	if err != nil {
		c.log.Warn("reading tool call decisions failed", zap.String("stream_id", l.streamID), zap.Error(err))
		return
	}
	for i, v := range vals {
		if d, ok := v.(string); ok {
			l.deliver(ids[i], d)
		}
	}
}

// deliverDecision hands a decision from the channel to the local lease.
func (c *Coordinator) deliverDecision(payload string) {
	var m decisionMsg
	if json.Unmarshal([]byte(payload), &m) != nil {
		return
	}
	c.mu.Lock()
	l, found := c.local[m.Stream]
	c.mu.Unlock()
	if found {
		l.deliver(m.Call, m.Decision)
	}
}

// SendDecision delivers a user's decision on tool call toolCallID to the
// replica generating streamID. It reports whether a live generation was
// found; whether the call still waits is the generator's to check (a
// decision for a call that does not wait is dropped).
func (c *Coordinator) SendDecision(ctx context.Context, streamID, toolCallID, decision string) (bool, error) {
	c.mu.Lock()
	l, ok := c.local[streamID]
	c.mu.Unlock()
	if ok {
		return l.deliver(toolCallID, decision), nil
	}
	n, err := c.opts.Client.Exists(ctx, c.leaseKey(streamID)).Result()
	if err != nil {
		return false, fmt.Errorf("cluster: find generation %s: %w", streamID, err)
	}
	if n == 0 {
		return false, nil
	}
	msg, _ := json.Marshal(decisionMsg{Stream: streamID, Call: toolCallID, Decision: decision})
	_, err = c.opts.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, c.decisionKey(streamID, toolCallID), decision, 2*c.opts.LeaseTTL)
		p.Publish(ctx, c.decisionChannel(), string(msg))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("cluster: send decision on %s: %w", streamID, err)
	}
	return true, nil
}
