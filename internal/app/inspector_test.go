package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/inspect"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// inspectTurn reads GET /api/v1/messages/{id}/trace.
func (h *harness) inspectTurn(id string) (int, inspect.Turn, []byte) {
	h.t.Helper()
	resp := h.do(context.Background(), "GET", "/api/v1/messages/"+id+"/trace", "")
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var turn inspect.Turn
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &turn); err != nil {
			h.t.Fatalf("trace body: %v: %s", err, raw)
		}
	}
	return resp.StatusCode, turn, raw
}

// waitReplayGone waits until the stream of id can no longer be replayed.
func (h *harness) waitReplayGone(id string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := h.do(context.Background(), "GET", "/api/v1/streams/"+id+"?after=0", "")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "answer.delta") {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the stream of %s is still replayable", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func shortReplayWindow(c *config.Config) { c.Stream.Retention = 50 * time.Millisecond }

func TestTurnInspectorShowsWhatEachStageDidAfterTheReplayWindowExpired(t *testing.T) {
	h := newHarness(t, ragMode, shortReplayWindow)
	h.addDocument("Starter care", sourdough)
	h.addDocument("Green tea", teaChinese)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Feed it twice a day [1].", 3),
		Usage: &providertest.Usage{PromptTokens: 120, CompletionTokens: 7}})
	s := h.ask(h.createSession(), "How often do I feed the sourdough starter?")
	s.all()
	id := s.messageID()
	h.waitDone(id)
	h.waitReplayGone(id)

	code, turn, raw := h.inspectTurn(id)
	if code != http.StatusOK {
		t.Fatalf("GET trace: %d %s", code, raw)
	}
	if turn.MessageID != id || turn.Mode != "rag" || turn.Status != "completed" || turn.Truncated {
		t.Errorf("record header = %+v", turn)
	}
	var names []string
	for _, st := range turn.Stages {
		names = append(names, st.Name+"/"+st.Plugin)
	}
	if got := strings.Join(names, " "); got != "load_history/load_history rewrite/rewrite search/search rerank/rerank merge/merge generate/chat_completion_stream" {
		t.Errorf("stages = %s", got)
	}
	if turn.Search == nil || len(turn.Search.Candidates) == 0 || turn.Search.Query == "" {
		t.Fatalf("search = %+v", turn.Search)
	}
	top := turn.Search.Candidates[0]
	if top.Title != "Starter care" || top.KeywordScore <= 0 || top.FusedScore <= 0 || top.KeywordRank != 1 || top.Content == "" {
		t.Errorf("top candidate = %+v", top)
	}
	if turn.Rerank == nil || len(turn.Rerank.Kept) == 0 || turn.Rerank.Reason == "" {
		t.Fatalf("rerank = %+v", turn.Rerank)
	}
	if turn.Rerank.Kept[0].ChunkID != top.ChunkID {
		t.Errorf("rerank kept %+v first; the best candidate was %s", turn.Rerank.Kept[0], top.ChunkID)
	}
	if len(turn.Context) == 0 || turn.Context[0].Index != 1 || !strings.Contains(turn.Context[0].Content, "twice a day") {
		t.Errorf("context = %+v", turn.Context)
	}
	last := turn.Prompt[len(turn.Prompt)-1]
	if last.Role != "user" || !strings.Contains(last.Content, "twice a day") || !strings.Contains(last.Content, "How often do I feed") {
		t.Errorf("the prompt's last message is not the rag prompt with the passages and the question: %+v", last)
	}
	if len(turn.ModelCalls) != 1 {
		t.Fatalf("model calls = %+v", turn.ModelCalls)
	}
	mc := turn.ModelCalls[0]
	if mc.Purpose != "generate" || mc.Model != "fake-model" || mc.Entry != "default" || mc.InputTokens != 120 ||
		mc.OutputTokens != 7 || mc.Status != "completed" || mc.StartedAt.IsZero() {
		t.Errorf("model call = %+v", mc)
	}
}

func TestTurnInspectorRecordsAreTenantScoped(t *testing.T) {
	h := newHarness(t, withTwoTenants)
	acme, beta := h.as(acmeKey), h.as(betaKey)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("acme's answer", 2)})
	s := acme.ask(acme.createSession(), "q")
	s.all()
	id := s.messageID()
	acme.waitDone(id)
	if code, turn, raw := acme.inspectTurn(id); code != http.StatusOK || turn.MessageID != id {
		t.Fatalf("owner: %d %s", code, raw)
	}
	code, _, raw := beta.inspectTurn(id)
	var e handler.ErrorBody
	_ = json.Unmarshal(raw, &e)
	if code != http.StatusNotFound || e.Error.Code != "not_found" || strings.Contains(string(raw), "acme's answer") {
		t.Fatalf("another tenant: %d %s; want 404 not_found", code, raw)
	}
	if code, _, _ := acme.inspectTurn("no-such-message"); code != http.StatusNotFound {
		t.Fatalf("unknown id: %d", code)
	}
}

func TestTurnInspectorRecordsStayWithinTheirSizeBoundAndSaySo(t *testing.T) {
	const maxBytes = 4096
	h := newHarness(t, ragMode, func(c *config.Config) { c.Telemetry.Inspector.MaxBytes = maxBytes })
	long := strings.Repeat("The sourdough starter likes rye flour and warm water. ", 200)
	h.addDocument("Long starter notes", "# Starter\n\n"+long)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Rye flour [1].", 2)})
	s := h.ask(h.createSession(), "What does the sourdough starter like?")
	s.all()
	h.waitDone(s.messageID())
	code, turn, raw := h.inspectTurn(s.messageID())
	if code != http.StatusOK {
		t.Fatalf("GET trace: %d %s", code, raw)
	}
	if len(raw) > maxBytes {
		t.Errorf("record of %d bytes, bound %d", len(raw), maxBytes)
	}
	if !turn.Truncated || !strings.Contains(turn.TruncatedNote, "max_bytes") {
		t.Errorf("truncated = %v, note %q", turn.Truncated, turn.TruncatedNote)
	}
	if len(turn.Stages) == 0 || len(turn.ModelCalls) == 0 {
		t.Errorf("a cut record keeps its stages and model calls: %s", raw)
	}
}

func TestTurnInspectorCanBeTurnedOffPerMode(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.Telemetry.Inspector.DisabledModes = []string{"chat"} })
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("hi", 1)})
	s := h.ask(h.createSession(), "q")
	s.all()
	h.waitDone(s.messageID())
	if code, _, raw := h.inspectTurn(s.messageID()); code != http.StatusNotFound {
		t.Fatalf("a mode with the inspector off: %d %s", code, raw)
	}
}

// Each answer of a side-by-side question has its own record: its own
// model call, its own stages (each once, not the other model's too), the
// prompt it was sent and its own ending, though the models share a stream.
func TestTurnInspectorRecordsEachSideBySideAnswer(t *testing.T) {
	h := newHarness(t, ragMode, withOtherModel)
	h.addDocument("Starter care", sourdough)
	scriptsByModel(h, map[string]providertest.Script{
		"fake-model": {Chunks: providertest.Answer("Feed it twice a day [1].", 3),
			Usage: &providertest.Usage{PromptTokens: 120, CompletionTokens: 7}},
		"other-model": {Chunks: providertest.Content("Twice", 1),
			MidStreamError: &providertest.StreamError{After: 1, ErrorObject: providertest.ErrorObject{
				Message: "upstream overloaded", Type: "server_error"}}},
	})
	const question = "How often do I feed the sourdough starter?"
	s := h.compare(h.createSession(), question, "default", "other")
	evs := s.all()
	started := evs[0].Payload.(eventbus.StreamStarted)
	if len(started.Models) != 2 {
		t.Fatalf("stream.started = %+v", started)
	}
	h.waitDone(s.messageID())

	for _, want := range []struct {
		entry, model, status string
	}{
		{"default", "fake-model", "completed"},
		{"other", "other-model", "failed"},
	} {
		id := started.Models[slices.IndexFunc(started.Models, func(a eventbus.ModelAnswer) bool { return a.Model == want.entry })].MessageID
		code, turn, raw := h.inspectTurn(id)
		if code != http.StatusOK {
			t.Fatalf("%s: GET trace: %d %s", want.entry, code, raw)
		}
		if turn.MessageID != id || turn.Mode != "rag" || turn.Question != question || turn.Status != want.status ||
			turn.TraceID != started.TraceID {
			t.Errorf("%s: record header = %+v", want.entry, turn)
		}
		var names []string
		for _, st := range turn.Stages {
			names = append(names, st.Name+"/"+st.Plugin)
		}
		if got := strings.Join(names, " "); got != "load_history/load_history rewrite/rewrite search/search rerank/rerank merge/merge generate/chat_completion_stream" {
			t.Errorf("%s: stages = %s", want.entry, got)
		}
		if turn.Search == nil || len(turn.Search.Candidates) == 0 || turn.Search.Candidates[0].Title != "Starter care" {
			t.Errorf("%s: search = %+v", want.entry, turn.Search)
		}
		if len(turn.Context) == 0 || !strings.Contains(turn.Context[0].Content, "twice a day") {
			t.Errorf("%s: context = %+v", want.entry, turn.Context)
		}
		if len(turn.Prompt) == 0 || !strings.Contains(turn.Prompt[len(turn.Prompt)-1].Content, question) {
			t.Errorf("%s: prompt = %+v", want.entry, turn.Prompt)
		}
		if len(turn.ModelCalls) != 1 {
			t.Fatalf("%s: model calls = %+v", want.entry, turn.ModelCalls)
		}
		mc := turn.ModelCalls[0]
		if mc.Purpose != "generate" || mc.Entry != want.entry || mc.Model != want.model {
			t.Errorf("%s: model call = %+v", want.entry, mc)
		}
		if want.status == "completed" && (mc.Status != "completed" || mc.InputTokens != 120 || mc.OutputTokens != 7) {
			t.Errorf("%s: model call = %+v", want.entry, mc)
		}
		if want.status == "failed" && mc.Status == "completed" {
			t.Errorf("%s: a call that failed mid-stream is recorded as %+v", want.entry, mc)
		}
	}
}
