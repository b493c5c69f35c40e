package app_test

import (
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// The cause of a failed answer (PluginError.Err), which the user never
// sees, is logged at error with the stream's ids; the user's question is
// not logged.
func TestFailedAnswerLogsItsCause(t *testing.T) {
	h := newHarness(t)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("some words then trouble", 6),
		MidStreamError: &providertest.StreamError{After: 3, ErrorObject: providertest.ErrorObject{Message: "upstream overloaded xyz"}}})
	evs := h.ask(h.createSession(), "my private question").all()
	if finished(t, evs).Status != eventbus.StatusFailed {
		t.Fatal("not failed")
	}
	h.waitDone(evs[0].StreamID)
	var found bool
	for _, e := range h.logs.All() {
		for _, f := range e.Context {
			if strings.Contains(f.String, "my private question") {
				t.Errorf("log %q carries the user's text", e.Message)
			}
		}
		cause, _ := e.ContextMap()["error"].(string)
		if e.Level >= zap.WarnLevel && strings.Contains(cause, "upstream overloaded xyz") {
			found = found || e.ContextMap()["stream_id"] == evs[0].StreamID
		}
	}
	if !found {
		t.Fatalf("no warn/error log with the cause; logs: %v", h.logs.All())
	}
}
