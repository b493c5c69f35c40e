package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/knowledge/knowledgetest"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// An incoming traceparent (W3C): the request's span must be its child.
const (
	parentTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpanID  = "00f067aa0ba902b7"
	traceparent   = "00-" + parentTraceID + "-" + parentSpanID + "-01"
)

// withTraces sends traces to endpoint.
func withTraces(endpoint string) func(*config.Config) {
	return func(c *config.Config) {
		c.Telemetry.Traces.Enabled = true
		c.Telemetry.Traces.Endpoint = endpoint
		c.Telemetry.Traces.Timeout = 300 * time.Millisecond
	}
}

// askWith posts a question with extra headers and returns its stream.
func (h *harness) askWith(session, question string, header ...string) *sse {
	h.t.Helper()
	body, _ := json.Marshal(map[string]string{"content": question})
	s := h.open("POST", "/api/v1/sessions/"+session+"/messages", string(body), header...)
	if s.resp.StatusCode != 200 {
		h.t.Fatalf("ask: %d", s.resp.StatusCode)
	}
	return s
}

func (h *harness) flushTraces() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.app.FlushTraces(ctx); err != nil {
		h.t.Fatalf("flush traces: %v", err)
	}
}

func streamStarted(t *testing.T, evs []event) eventbus.StreamStarted {
	t.Helper()
	for _, e := range evs {
		if p, ok := e.Payload.(eventbus.StreamStarted); ok {
			return p
		}
	}
	t.Fatal("no stream.started")
	return eventbus.StreamStarted{}
}

func TestRagAnswerTraceReachesAnOTLPCollectorAsOneTreeWithGenAIAttributesAndNoText(t *testing.T) {
	rcv := newOTLPReceiver(t)
	emb := knowledgetest.NewEmbeddingServer(t, knowledgetest.HashEmbedder{Dims: 32})
	h := newHarness(t, ragMode, withTraces(rcv.URL()), withEmbeddings(emb))
	h.addDocument("Starter care", sourdough)
	const answer = "Feed the starter twice a day [1]."
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer(answer, 4),
		Usage: &providertest.Usage{PromptTokens: 321, CompletionTokens: 9}})
	const question = "How often do I feed my sourdough starter?"
	s := h.askWith(h.createSession(), question, "traceparent", traceparent)
	evs := s.all()
	if f := finished(t, evs); f.Status != eventbus.StatusCompleted {
		t.Fatalf("finished = %+v", f)
	}
	if got := streamStarted(t, evs).TraceID; got != parentTraceID {
		t.Fatalf("stream.started trace_id = %q, want the traceparent's %q", got, parentTraceID)
	}
	h.waitDone(s.messageID())
	h.flushTraces()

	var spans []*tracepb.Span
	for _, sp := range rcv.Spans() {
		if spanHex(sp.TraceId) == parentTraceID {
			spans = append(spans, sp)
		}
	}
	req := spanNamed(t, spans, "POST /api/v1/sessions/:id/messages")
	if spanHex(req.ParentSpanId) != parentSpanID || req.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("request span: parent %s kind %v; want the traceparent's span %s, server", spanHex(req.ParentSpanId), req.Kind, parentSpanID)
	}
	run := spanNamed(t, spans, "answer rag")
	if string(run.ParentSpanId) != string(req.SpanId) {
		t.Errorf("the answer's span is not a child of the request's")
	}
	if got := attrString(run.Attributes, "chatpipe.stream.status"); got != "completed" {
		t.Errorf("answer span status = %q", got)
	}
	for _, stage := range []string{"load_history", "rewrite", "search", "rerank", "merge", "generate"} {
		sp := spanNamed(t, spans, "stage "+stage)
		if string(sp.ParentSpanId) != string(run.SpanId) {
			t.Errorf("stage %s is not a child of the answer's span", stage)
		}
		if attrString(sp.Attributes, "chatpipe.plugin") == "" || attrString(sp.Attributes, "chatpipe.mode") != "rag" {
			t.Errorf("stage %s attributes: %v", stage, sp.Attributes)
		}
	}
	search := spanNamed(t, spans, "knowledge.search")
	if string(search.ParentSpanId) != string(spanNamed(t, spans, "stage search").SpanId) {
		t.Errorf("knowledge.search is not a child of the search stage")
	}
	if n := attrString(search.Attributes, "chatpipe.search.result_count"); n == "" || n == "0" {
		t.Errorf("search result count = %q", n)
	}
	if top := attrString(search.Attributes, "chatpipe.search.top_score"); top == "" || top == "0" {
		t.Errorf("search top score = %q", top)
	}
	embed := spanNamed(t, spans, "embeddings hash-embed")
	if string(embed.ParentSpanId) != string(search.SpanId) || attrString(embed.Attributes, "gen_ai.operation.name") != "embeddings" {
		t.Errorf("embedding span: parent %s, attributes %v", spanHex(embed.ParentSpanId), embed.Attributes)
	}
	call := spanNamed(t, spans, "chat fake-model")
	if string(call.ParentSpanId) != string(spanNamed(t, spans, "stage generate").SpanId) || call.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("model call span is not a client child of the generate stage")
	}
	for key, want := range map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "fake-model", "gen_ai.provider.name": "openai",
		"gen_ai.usage.input_tokens": "321", "gen_ai.usage.output_tokens": "9",
	} {
		if got := attrString(call.Attributes, key); got != want {
			t.Errorf("model call %s = %q, want %q", key, got, want)
		}
	}
	if !hasAttr(call.Attributes, "gen_ai.server.time_to_first_token") {
		t.Errorf("model call has no time to first token: %v", call.Attributes)
	}
	// No prompt, passage or answer text without capture_content.
	for _, sp := range spans {
		for _, kv := range sp.Attributes {
			v := kv.Value.String()
			for _, text := range []string{"sourdough starter", "twice a day", "rye flour"} {
				if strings.Contains(v, text) {
					t.Errorf("span %q attribute %s carries text %q", sp.Name, kv.Key, text)
				}
			}
		}
		if hasAttr(sp.Attributes, "gen_ai.input.messages") || hasAttr(sp.Attributes, "gen_ai.output.messages") {
			t.Errorf("span %q carries messages without capture_content", sp.Name)
		}
	}
	// The trace id is in the request's and the stream's log lines.
	for _, msg := range []string{"stream finished", "request"} {
		found := false
		for _, e := range h.logs.FilterMessage(msg).All() {
			if e.ContextMap()["trace_id"] == parentTraceID {
				found = true
			}
		}
		if !found {
			t.Errorf("no %q log line carries trace_id %s", msg, parentTraceID)
		}
	}
}

func TestCaptureContentPutsPromptAndAnswerIntoTheModelSpan(t *testing.T) {
	rcv := newOTLPReceiver(t)
	h := newHarness(t, withTraces(rcv.URL()), func(c *config.Config) { c.Telemetry.CaptureContent = true })
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Paris is the capital.", 3)})
	s := h.ask(h.createSession(), "What is the capital of France?")
	s.all()
	h.waitDone(s.messageID())
	h.flushTraces()
	call := spanNamed(t, rcv.Spans(), "chat fake-model")
	if in := attrString(call.Attributes, "gen_ai.input.messages"); !strings.Contains(in, "capital of France") {
		t.Errorf("input messages = %q", in)
	}
	if out := attrString(call.Attributes, "gen_ai.output.messages"); !strings.Contains(out, "Paris is the capital.") {
		t.Errorf("output messages = %q", out)
	}
}

func TestSpansOfAStreamThatOutlivesItsRequestStayInTheTrace(t *testing.T) {
	rcv := newOTLPReceiver(t)
	h := newHarness(t, withTraces(rcv.URL()))
	gate := providertest.NewGate()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("one two three four", 4), Hold: gate, HoldAfter: 1})
	session := h.createSession()
	s := h.ask(session, "q")
	id := s.messageID()
	traceID := ""
	s.until(func(e event) bool {
		if p, ok := e.Payload.(eventbus.StreamStarted); ok {
			traceID = p.TraceID
		}
		return e.Type == eventbus.TypeAnswerDelta
	})
	s.close() // the client leaves: the request ends, the generation goes on
	ctx := ctxTimeout(t)
	if err := gate.WaitReached(ctx); err != nil {
		t.Fatal(err)
	}
	// The request's span ends with the request, before the answer's.
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.flushTraces()
		if hasSpan(rcv.Spans(), "POST /api/v1/sessions/:id/messages") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request's span was not exported while the answer was still running")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if hasSpan(rcv.Spans(), "answer chat") {
		t.Fatal("the answer's span ended before the answer")
	}
	gate.Release()
	h.waitDone(id)
	h.flushTraces()
	spans := rcv.Spans()
	req := spanNamed(t, spans, "POST /api/v1/sessions/:id/messages")
	run := spanNamed(t, spans, "answer chat")
	call := spanNamed(t, spans, "chat fake-model")
	if traceID == "" || spanHex(req.TraceId) != traceID || spanHex(run.TraceId) != traceID || spanHex(call.TraceId) != traceID {
		t.Fatalf("trace ids: stream.started %q, request %s, answer %s, model call %s",
			traceID, spanHex(req.TraceId), spanHex(run.TraceId), spanHex(call.TraceId))
	}
	if string(run.ParentSpanId) != string(req.SpanId) || run.EndTimeUnixNano <= req.EndTimeUnixNano {
		t.Errorf("the answer's span should be the request's child and end after it")
	}
	if m := h.message(session, id); m.Status != "completed" {
		t.Errorf("the answer whose reader left was saved %q, want completed", m.Status)
	}
}

func hasSpan(spans []*tracepb.Span, name string) bool {
	for _, s := range spans {
		if s.Name == name {
			return true
		}
	}
	return false
}

func TestCollectorDownLeavesAnswersAloneAndWarnsOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more
	h := newHarness(t, withTraces(down))
	session := h.createSession()
	for i := range 3 {
		h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("still answering", 2)})
		s := h.ask(session, "q")
		evs := s.all()
		if f := finished(t, evs); f.Status != eventbus.StatusCompleted || text(evs, eventbus.TypeAnswerDelta) != "still answering" {
			t.Fatalf("answer %d with the collector down: %+v %q", i, f, text(evs, eventbus.TypeAnswerDelta))
		}
		h.waitDone(s.messageID())
		h.flushTraces()
	}
	if n := h.logs.FilterMessageSnippet("trace export failed").Len(); n != 1 {
		t.Fatalf("%d warnings about the collector, want exactly 1", n)
	}
}

func TestPluginStageHistogramsCarryTraceIDExemplarsInOpenMetrics(t *testing.T) {
	rcv := newOTLPReceiver(t)
	h := newHarness(t, withTraces(rcv.URL()))
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("hello there", 2)})
	s := h.ask(h.createSession(), "q")
	traceID := streamStarted(t, s.all()).TraceID
	h.waitDone(s.messageID())

	resp := h.do(context.Background(), "GET", "/metrics", "", "Accept", "application/openmetrics-text; version=1.0.0")
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/openmetrics-text") {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	found := false
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, `chatpipe_plugin_stage_duration_seconds_bucket{mode="chat",plugin="chat_completion_stream",stage="generate",status="finished"`) &&
			strings.Contains(line, `# {trace_id="`+traceID+`"}`) {
			found = true
		}
	}
	if traceID == "" || !found {
		t.Fatalf("no exemplar with trace %q on the plugin histogram:\n%s", traceID, grepLines(string(body), "chatpipe_plugin_stage"))
	}
	// The classic text format keeps working for scrapers that ask for it.
	plain := h.do(context.Background(), "GET", "/metrics", "")
	defer plain.Body.Close()
	text, _ := io.ReadAll(plain.Body)
	if !strings.Contains(string(text), `chatpipe_plugin_stage_duration_seconds_count{mode="chat",plugin="load_history",stage="load_history",status="finished"} 1`) {
		t.Fatalf("text format:\n%s", grepLines(string(text), "chatpipe_plugin_stage"))
	}
}

func TestStandardOTELVariablesAloneTurnTracingOn(t *testing.T) {
	rcv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "chatpipe-eu")
	h := newHarness(t) // telemetry.traces.enabled stays false
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("hi", 1)})
	s := h.ask(h.createSession(), "q")
	s.all()
	h.waitDone(s.messageID())
	h.flushTraces()
	spanNamed(t, rcv.Spans(), "answer chat")
	for _, name := range rcv.Services() {
		if name != "chatpipe-eu" {
			t.Fatalf("service.name %q, want OTEL_SERVICE_NAME's", name)
		}
	}
}
