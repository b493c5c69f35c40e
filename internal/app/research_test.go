package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// The research tests' knowledge base: one document per fruit, so a
// sub-researcher searching for its fruit finds exactly its passage, as [1]
// of its own numbering.
var researchFruits = []struct{ question, query, title, content string }{
	{"How are apples grown?", "apples orchard", "Apples", "Apples grow in orchards on trees pruned every winter."},
	{"How are bananas grown?", "bananas plantation", "Bananas", "Bananas grow on plantations in warm humid climates."},
	{"How are cherries grown?", "cherries blossom", "Cherries", "Cherries grow on trees whose blossom needs cold nights."},
}

// researchFake answers the research mode's model calls by what they ask:
// the plan, each sub-researcher's search then finding, the report.
type researchFake struct {
	fail    string             // a sub-question whose sub-researcher's call fails
	hold    *providertest.Gate // holds every sub-researcher's first call after its first chunk
	report  string             // the report's text
	planned string             // the plan's text
}

// lastUser is the content of a request's last user message, and whether
// the request carries tool results.
func lastUser(r providertest.Request) (string, bool) {
	var user string
	tools := false
	msgs, _ := r.Body["messages"].([]any)
	for _, m := range msgs {
		msg, _ := m.(map[string]any)
		switch msg["role"] {
		case "user":
			user, _ = msg["content"].(string)
		case "tool":
			tools = true
		}
	}
	return user, tools
}

func (f *researchFake) respond(r providertest.Request) providertest.Script {
	user, toolsDone := lastUser(r)
	usage := &providertest.Usage{PromptTokens: 10, CompletionTokens: 5}
	switch {
	case strings.Contains(user, "Plan the research"):
		return providertest.Script{Chunks: append(providertest.ReasoningContent("Three fruits.", 2),
			providertest.Answer(f.planned, 4)...), Usage: usage}
	case strings.Contains(user, "Write a research report"):
		return providertest.Script{Chunks: providertest.Answer(f.report, 5), Usage: usage}
	}
	for i, fr := range researchFruits {
		if !strings.Contains(user, "Sub-question: "+fr.question) {
			continue
		}
		if fr.question == f.fail {
			return providertest.Script{Status: http.StatusInternalServerError, Error: providertest.ErrorObject{Message: "boom"}}
		}
		if toolsDone {
			return providertest.Script{Chunks: providertest.Answer(fr.title+" finding [1].", 3), Usage: usage}
		}
		sc := providertest.Script{Chunks: append(providertest.ToolCall(0, fmt.Sprintf("call_%d", i+1), "knowledge_search",
			`{"query":"`+fr.query+`"}`, 3), providertest.Chunk{FinishReason: "tool_calls"}), Usage: usage}
		if f.hold != nil {
			sc.Hold, sc.HoldAfter = f.hold, 1
		}
		return sc
	}
	return providertest.Script{Status: http.StatusBadRequest, Error: providertest.ErrorObject{Message: "unexpected request: " + user}}
}

func newResearchFake() *researchFake {
	return &researchFake{
		planned: "1. " + researchFruits[0].question + "\n2. " + researchFruits[1].question + "\n3. " + researchFruits[2].question,
		report:  "Apples [1], bananas [2] and cherries [3] all grow on farms.",
	}
}

// researchHarness is a server whose research sessions run against f, with
// the three fruit documents.
func researchHarness(t *testing.T, f *researchFake, edits ...func(*config.Config)) *harness {
	h := newHarness(t, edits...)
	h.provider.SetResponder(f.respond)
	for _, fr := range researchFruits {
		h.addDocument(fr.title, fr.content)
	}
	return h
}

func (h *harness) createResearchSession() string {
	h.t.Helper()
	var s handler.SessionJSON
	if code := h.call("POST", "/api/v1/sessions", `{"title":"research","mode":"research"}`, &s); code != http.StatusCreated {
		h.t.Fatalf("create session: %d", code)
	}
	return s.ID
}

// origin writes an event's origin chain as agent:index/…, "" for none.
func origin(e event) string {
	parts := make([]string, len(e.Origin))
	for i, h := range e.Origin {
		parts[i] = fmt.Sprintf("%s:%d", h.Agent, h.Index)
	}
	return strings.Join(parts, "/")
}

// byOrigin groups the events by origin chain, each group in stream order.
func byOrigin(evs []event) map[string][]event {
	out := map[string][]event{}
	for _, e := range evs {
		out[origin(e)] = append(out[origin(e)], e)
	}
	return out
}

// The research mode end to end over HTTP: the plan streams as its own
// block, three sub-researchers run at once (all three provider calls are
// in flight before any ends), each one's events carry its origin and stay
// in order, and the report cites the union of their references with one
// numbering; the saved message is the report with those references.
func TestResearchModePlansResearchesInParallelAndReportsWithOneNumbering(t *testing.T) {
	f := newResearchFake()
	f.hold = providertest.NewGate()
	defer f.hold.Release()
	h := researchHarness(t, f)
	session := h.createResearchSession()
	s := h.ask(session, "How are fruits grown?")
	// 1 plan call + 3 sub-researchers' first calls, all held open at once.
	if err := h.provider.WaitRequests(ctxTimeout(t), 4); err != nil {
		t.Fatalf("the sub-researchers did not run in parallel: %v", err)
	}
	f.hold.Release()
	evs := s.all()
	checkSeqs(t, evs, 1)
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("finished = %+v (%v)", fin, summary(evs, false))
	}

	groups := byOrigin(evs)
	if want := []string{"", "plan:0", "sub:1", "sub:2", "sub:3"}; !slices.Equal(slices.Sorted(maps.Keys(groups)), want) {
		t.Fatalf("origins = %v, want %v", slices.Sorted(maps.Keys(groups)), want)
	}
	if got := summary(groups["plan:0"], false); !slices.Equal(got, []string{"model_call.started", "thinking.start", "thinking.end", "answer.start", "answer.end", "usage", "model_call.finished"}) {
		t.Fatalf("plan block = %v", got)
	}
	if text(groups["plan:0"], eventbus.TypeAnswerDelta) != f.planned {
		t.Fatalf("plan text = %q", text(groups["plan:0"], eventbus.TypeAnswerDelta))
	}
	for i := range researchFruits {
		sub := groups[fmt.Sprintf("sub:%d", i+1)]
		want := []string{"research.subagent",
			"model_call.started@1.0", "tool_call.start@1.1", "tool_call.end@1.1", "model_call.finished@1.0",
			"references@1.1", "tool_result@1.1",
			"model_call.started@2.0", "answer.start@2.0", "answer.end@2.0", "model_call.finished@2.0",
			"usage", "research.subagent"}
		if got := summary(sub, false); !slices.Equal(got, want) {
			t.Fatalf("sub-researcher %d events\n got %v\nwant %v", i+1, got, want)
		}
		if st := sub[len(sub)-1].Payload.(eventbus.ResearchSubagent); st.Status != "finished" || st.Question != researchFruits[i].question || st.References != 1 {
			t.Fatalf("sub-researcher %d ended %+v", i+1, st)
		}
		if id := sub[0].Origin[0].ID; id == "" || slices.ContainsFunc(sub, func(e event) bool { return e.Origin[0].ID != id }) {
			t.Fatalf("sub-researcher %d: origin ids differ", i+1)
		}
	}
	// The three sub-researchers interleave on the one stream.
	firstEnd := slices.IndexFunc(evs, func(e event) bool {
		st, ok := e.Payload.(eventbus.ResearchSubagent)
		return ok && st.Status == "finished"
	})
	if started := countSubStarts(evs[:firstEnd]); started != 3 {
		t.Fatalf("%d sub-researchers had started when the first finished", started)
	}

	var plan eventbus.ResearchPlan
	for _, e := range groups[""] {
		if p, ok := e.Payload.(eventbus.ResearchPlan); ok {
			plan = p
		}
	}
	if len(plan.Questions) != 3 || plan.Questions[1] != researchFruits[1].question {
		t.Fatalf("research.plan = %+v", plan)
	}
	// The report's prompt carries each finding renumbered to the union.
	var reportReq providertest.Request
	for _, r := range h.provider.Requests() {
		if u, _ := lastUser(r); strings.Contains(u, "Write a research report") {
			reportReq = r
		}
	}
	prompt, _ := lastUser(reportReq)
	for _, want := range []string{"Apples finding [1].", "Bananas finding [2].", "Cherries finding [3].",
		"[1] Apples", "[2] Bananas", "[3] Cherries"} {
		if !strings.Contains(prompt, want) {
			t.Fatalf("report prompt lacks %q:\n%s", want, prompt)
		}
	}
	root := groups[""]
	if got := text(root, eventbus.TypeAnswerDelta); got != f.report {
		t.Fatalf("report = %q", got)
	}
	msg := h.message(session, s.messageID())
	if msg.Status != "completed" || msg.Content != f.report || len(msg.References) != 3 ||
		msg.References[1].Title != "Bananas" || msg.References[1].Index != 2 {
		t.Fatalf("saved = %+v", msg)
	}
	// The usage of the answer is every call's: plan, 3 x 2 sub calls, report.
	var u eventbus.Usage
	for _, e := range root {
		if p, ok := e.Payload.(eventbus.Usage); ok {
			u = p
		}
	}
	if u.PromptTokens != 80 || u.CompletionTokens != 40 {
		t.Fatalf("usage = %+v, want 8 calls' worth", u)
	}
	// Replaying the finished stream gives the same events, origins included.
	sameEvents(t, h.open("GET", "/api/v1/streams/"+s.messageID(), "").all(), evs)
}

// One sub-researcher's provider fails: it is reported failed on its own
// origin, the others' findings are renumbered without it, and the report
// still comes, ending with what is missing.
func TestResearchSubagentFailureIsReportedAndTheReportStillComes(t *testing.T) {
	f := newResearchFake()
	f.fail = researchFruits[1].question
	f.report = "Apples [1] and cherries [2] grow on trees."
	h := researchHarness(t, f)
	session := h.createResearchSession()
	s := h.ask(session, "How are fruits grown?")
	evs := s.all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("finished = %+v", fin)
	}
	groups := byOrigin(evs)
	failed := groups["sub:2"]
	last := failed[len(failed)-1].Payload.(eventbus.ResearchSubagent)
	if last.Status != "failed" || last.Detail == "" {
		t.Fatalf("failed sub-researcher ended %+v", last)
	}
	if _, ok := firstError(groups[""]); ok {
		t.Fatal("the sub-researcher's failure failed the answer")
	}
	msg := h.message(session, s.messageID())
	wantNote := `Not covered, because its research failed: "How are bananas grown?"`
	if msg.Status != "completed" || !strings.HasPrefix(msg.Content, f.report) || !strings.Contains(msg.Content, wantNote) {
		t.Fatalf("saved = %+v", msg)
	}
	if len(msg.References) != 2 || msg.References[1].Title != "Cherries" || msg.References[1].Index != 2 {
		t.Fatalf("references = %+v", msg.References)
	}
	var prompt string
	for _, r := range h.provider.Requests() {
		if u, _ := lastUser(r); strings.Contains(u, "Write a research report") {
			prompt = u
		}
	}
	if !strings.Contains(prompt, "Cherries finding [2].") || !strings.Contains(prompt, "### 2. How are bananas grown?\n(no findings:") {
		t.Fatalf("report prompt:\n%s", prompt)
	}
}

// With clarify on, an ambiguous request gets one question back (saved as
// the answer), and the next message answers it: the plan is then asked
// with both and may not ask again.
func TestResearchClarifyingQuestionIsAnsweredByTheNextMessage(t *testing.T) {
	f := newResearchFake()
	h := researchHarness(t, f, func(c *config.Config) { c.Plugins["research_plan"]["clarify"] = true })
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("CLARIFY: Which fruits do you mean?", 3)})
	session := h.createResearchSession()
	first := h.ask(session, "How are they grown?")
	evs := first.all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("finished = %+v", fin)
	}
	if n := len(h.provider.Requests()); n != 1 {
		t.Fatalf("%d provider calls for a clarification", n)
	}
	msg := h.message(session, first.messageID())
	if msg.Content != "Before I research this: Which fruits do you mean?" {
		t.Fatalf("saved clarification = %q", msg.Content)
	}
	second := h.ask(session, "Apples, bananas and cherries.")
	if fin := finished(t, second.all()); fin.Status != eventbus.StatusCompleted {
		t.Fatalf("finished = %+v", fin)
	}
	plan, _ := lastUser(h.provider.Requests()[1])
	if !strings.Contains(plan, "How are they grown?\n\nClarification: Apples, bananas and cherries.") || strings.Contains(plan, "CLARIFY:") {
		t.Fatalf("second plan prompt:\n%s", plan)
	}
	if got := h.message(session, second.messageID()).Content; got != f.report {
		t.Fatalf("report = %q", got)
	}
}

// Stop while the three sub-researchers stream: every provider call is
// aborted, the stream ends stopped, the findings so far are saved, and
// reading the finished stream back cut at every k-th event — from this
// replica's memory and, with Redis, from another replica — reproduces it
// exactly, origins included.
func TestResearchStopAbortsEverySubagentAndResumeReplaysTheNestedStream(t *testing.T) {
	f := newResearchFake()
	f.hold = providertest.NewGate()
	defer f.hold.Release()
	var replicas []*harness
	addr := os.Getenv("CHATPIPE_TEST_REDIS_ADDR")
	if addr != "" {
		prefix := "chatpipe-test:" + uuid.NewString() + ":"
		admin := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
		t.Cleanup(func() {
			if keys, _ := admin.Keys(context.Background(), prefix+"*").Result(); len(keys) > 0 {
				admin.Del(context.Background(), keys...)
			}
			admin.Close()
		})
		onRedis := func(c *config.Config) { c.StreamStore = "redis"; c.Redis.Addr, c.Redis.KeyPrefix = addr, prefix }
		first := researchHarness(t, f, onRedis)
		second := baseConfig(t, first.provider)
		onRedis(second)
		second.Storage = first.app.Config().Storage
		replicas = []*harness{first, startHarness(t, first.provider, second, "")}
	} else {
		t.Log("CHATPIPE_TEST_REDIS_ADDR not set: resume is checked on the memory store only")
		replicas = []*harness{researchHarness(t, f)}
	}
	h := replicas[0]
	session := h.createResearchSession()
	s := h.ask(session, "How are fruits grown?")
	if err := h.provider.WaitRequests(ctxTimeout(t), 4); err != nil {
		t.Fatal(err)
	}
	// Every sub-researcher has streamed its tool call's first chunk.
	for started := 0; started < 3; {
		e, ok := s.next()
		if !ok {
			t.Fatal("stream ended early")
		}
		if e.Type == eventbus.TypeToolCallStart && len(e.Origin) == 1 {
			started++
		}
	}
	if code := h.call("POST", "/api/v1/streams/"+s.messageID()+"/stop", "", nil); code != http.StatusAccepted {
		t.Fatalf("stop: %d", code)
	}
	for i := range 3 {
		if err := h.provider.WaitAbort(ctxTimeout(t)); err != nil {
			t.Fatalf("only %d of 3 sub-researcher calls were aborted: %v", i, err)
		}
	}
	s.close()
	h.waitDone(s.messageID())
	full := h.open("GET", "/api/v1/streams/"+s.messageID(), "").all()
	checkSeqs(t, full, 1)
	if fin := finished(t, full); fin.Status != eventbus.StatusStopped {
		t.Fatalf("finished = %+v", fin)
	}
	if n := len(h.provider.Requests()); n != 4 {
		t.Fatalf("%d provider calls, want 4: nothing is asked after a stop", n)
	}
	for i := range 3 {
		sub := byOrigin(full)[fmt.Sprintf("sub:%d", i+1)]
		if countTypes(sub, eventbus.TypeToolCallStart) != countTypes(sub, eventbus.TypeToolCallEnd) {
			t.Fatalf("sub-researcher %d left a tool call open: %v", i+1, summary(sub, false))
		}
		if st := sub[len(sub)-1].Payload.(eventbus.ResearchSubagent); st.Status != "failed" || st.Detail != "stopped" {
			t.Fatalf("sub-researcher %d ended %+v", i+1, st)
		}
	}
	msg := h.message(session, s.messageID())
	if msg.Status != "stopped" || !strings.HasPrefix(msg.Content, "The research was stopped before its report.") ||
		!strings.Contains(msg.Content, "### 3. How are cherries grown?") {
		t.Fatalf("saved = %+v", msg)
	}
	for r, replica := range replicas {
		for _, k := range []int{1, 2, 5, 13} {
			t.Run(fmt.Sprintf("replica%d/k=%d", r+1, k), func(t *testing.T) {
				var got []event
				for last := "0"; len(got) < len(full); {
					rd := replica.open("GET", "/api/v1/streams/"+s.messageID()+"?after="+last, "")
					for range k {
						e, ok := rd.next()
						if !ok {
							break
						}
						got = append(got, e)
					}
					rd.close()
					if len(got) == 0 {
						t.Fatal("no event replayed")
					}
					last = got[len(got)-1].ID
				}
				sameEvents(t, got, full)
			})
		}
	}
}

// sameEvents asserts two readings of a stream are identical, event for
// event: seq, type, origin, placement, text and payload.
func sameEvents(t *testing.T, got, want []event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i].Event, want[i].Event
		if !reflect.DeepEqual(g, w) {
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			t.Fatalf("event %d differs:\n got %s\nwant %s", i, gj, wj)
		}
	}
}

func countSubStarts(evs []event) int {
	n := 0
	for _, e := range evs {
		if st, ok := e.Payload.(eventbus.ResearchSubagent); ok && st.Status == "started" {
			n++
		}
	}
	return n
}

// Cutting the connection after every k-th event of a live research answer
// and resuming after the last event read yields exactly the stream a full
// replay gives: the interleaved sub-researchers' events, origins included,
// with no gap and no duplicate.
func TestResearchResumeMidStreamAtEveryKthEventReproducesTheNestedStream(t *testing.T) {
	for _, k := range []int{1, 3, 7} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			f := newResearchFake()
			h := researchHarness(t, f)
			slow := f.respond
			h.provider.SetResponder(func(r providertest.Request) providertest.Script {
				sc := slow(r)
				sc.Delay = time.Millisecond // still streaming while the test cuts and resumes
				return sc
			})
			s := h.ask(h.createResearchSession(), "How are fruits grown?")
			id := s.messageID()
			var got []event
			rd := s
			for done := false; !done; {
				for range k {
					e, ok := rd.next()
					if !ok {
						t.Fatalf("stream ended without stream.finished after %d events", len(got))
					}
					got = append(got, e)
					if done = e.Type == eventbus.TypeStreamFinished; done {
						break
					}
				}
				rd.close()
				if !done {
					rd = h.open("GET", "/api/v1/streams/"+id, "", "Last-Event-ID", got[len(got)-1].ID)
				}
			}
			checkSeqs(t, got, 1)
			if fin := finished(t, got); fin.Status != eventbus.StatusCompleted {
				t.Fatalf("finished = %+v", fin)
			}
			if len(byOrigin(got)) != 5 {
				t.Fatalf("origins %v", slices.Collect(maps.Keys(byOrigin(got))))
			}
			sameEvents(t, got, h.open("GET", "/api/v1/streams/"+id, "").all())
		})
	}
}
