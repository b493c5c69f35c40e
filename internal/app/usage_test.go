package app_test

import (
	"net/http"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// A stopped or failed answer ends before the provider's usage chunk: its
// usage is a counted estimate, marked estimated, in the usage event, the
// saved message and the token metrics — never zeros.
func TestStoppedAndFailedAnswersReportEstimatedUsage(t *testing.T) {
	long := "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
	cases := []struct {
		name   string
		script func(*providertest.Gate) providertest.Script
		stop   bool
		status string
	}{
		{"stopped mid-stream", func(g *providertest.Gate) providertest.Script {
			return providertest.Script{Chunks: append(providertest.ReasoningContent("thinking first", 2), providertest.Answer(long, 8)...),
				Hold: g, HoldAfter: 6, Usage: &providertest.Usage{PromptTokens: 999, CompletionTokens: 999}}
		}, true, eventbus.StatusStopped},
		{"provider error mid-stream", func(*providertest.Gate) providertest.Script {
			return providertest.Script{Chunks: providertest.Answer(long, 8),
				MidStreamError: &providertest.StreamError{After: 5, ErrorObject: providertest.ErrorObject{Message: "overloaded"}}}
		}, false, eventbus.StatusFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			gate := providertest.NewGate()
			defer gate.Release()
			h.provider.Enqueue(c.script(gate))
			before := scrape(t, h)
			session := h.createSession()
			s := h.ask(session, "a question of several words")
			var evs []event
			if c.stop {
				if err := gate.WaitReached(ctxTimeout(t)); err != nil {
					t.Fatal(err)
				}
				evs = s.until(isType(eventbus.TypeAnswerDelta))
				if code := h.call("POST", "/api/v1/streams/"+s.messageID()+"/stop", "", nil); code != http.StatusAccepted {
					t.Fatalf("stop: %d", code)
				}
			}
			evs = append(evs, s.all()...)
			if fin := finished(t, evs); fin.Status != c.status {
				t.Fatalf("finished = %+v", fin)
			}
			var usage *eventbus.Usage
			for _, e := range evs {
				if u, ok := e.Payload.(eventbus.Usage); ok {
					usage = &u
				}
			}
			if usage == nil || !usage.Estimated || usage.PromptTokens == 0 || usage.CompletionTokens == 0 {
				t.Fatalf("usage event = %+v, want an estimate with tokens", usage)
			}
			h.waitDone(s.messageID())
			msg := h.message(session, s.messageID())
			if msg.Usage == nil || *msg.Usage != *usage {
				t.Fatalf("saved usage = %+v, want %+v", msg.Usage, usage)
			}
			after := scrape(t, h)
			for _, name := range []string{
				`gen_ai_client_token_usage_total{mode="chat",type="output"}`,
				`chatpipe_token_usage_estimated_total{mode="chat",type="output"}`,
			} {
				if got := after[name] - before[name]; got != float64(usage.CompletionTokens) {
					t.Errorf("%s moved by %v, want %d", name, got, usage.CompletionTokens)
				}
			}
		})
	}
}
