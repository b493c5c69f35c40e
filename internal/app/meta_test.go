package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// Prompts of the model jobs after a turn, told apart from answers by the
// fake provider's responder.
const (
	titleMarker   = "Write a short title"
	summaryMarker = "Summarise the conversation"
)

// promptMessages returns a provider request's messages as role: content.
func promptMessages(r providertest.Request) [][2]string {
	var out [][2]string
	msgs, _ := r.Body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		content, _ := mm["content"].(string)
		out = append(out, [2]string{role, content})
	}
	return out
}

// lastContent is the content of a request's last message.
func lastContent(r providertest.Request) string {
	msgs := promptMessages(r)
	if len(msgs) == 0 {
		return ""
	}
	return msgs[len(msgs)-1][1]
}

// requestsWith returns the provider requests whose last message contains s.
func requestsWith(p *providertest.Server, s string) []providertest.Request {
	var out []providertest.Request
	for _, r := range p.Requests() {
		if strings.Contains(lastContent(r), s) {
			out = append(out, r)
		}
	}
	return out
}

// answersFor makes the fake provider answer questions with "Answer to
// <question>" padded with words (so history grows), titles with title and
// summaries with summary; a zero Script (Status 0 and no chunks) for a
// job means: fail it with a 500.
func answersFor(p *providertest.Server, padWords int, title, summary providertest.Script) {
	p.SetResponder(func(r providertest.Request) providertest.Script {
		last := lastContent(r)
		switch {
		case strings.Contains(last, titleMarker):
			return title
		case strings.Contains(last, summaryMarker):
			return summary
		}
		return providertest.Script{Chunks: providertest.Answer("Answer to "+last+"."+strings.Repeat(" word", padWords), 3)}
	})
}

var failed = providertest.Script{Status: http.StatusInternalServerError}

func reply(text string) providertest.Script {
	return providertest.Script{Chunks: providertest.Answer(text, 2)}
}

func withTitles(c *config.Config) { c.Titles.Enabled = true }

// withCompaction turns compaction on with a small budget: a history of
// more than budget tokens is compacted, keeping the newest keep rounds.
func withCompaction(budget, keep int) func(*config.Config) {
	return func(c *config.Config) {
		c.Plugins["load_history"]["compaction"] = map[string]any{"enabled": true, "budget_tokens": budget, "keep_rounds": keep}
	}
}

// newSession creates a session without a title, as the web page does.
func (h *harness) newSession() string {
	h.t.Helper()
	var s handler.SessionJSON
	if code := h.call("POST", "/api/v1/sessions", `{}`, &s); code != http.StatusCreated {
		h.t.Fatalf("create session: %d", code)
	}
	return s.ID
}

func (h *harness) session(id string) handler.SessionJSON {
	h.t.Helper()
	var s handler.SessionJSON
	if code := h.call("GET", "/api/v1/sessions/"+id, "", &s); code != http.StatusOK {
		h.t.Fatalf("get session: %d", code)
	}
	return s
}

func payloadOf[T any](t *testing.T, evs []event, ty eventbus.Type) (T, bool) {
	t.Helper()
	var zero T
	for _, ev := range evs {
		if ev.Type == ty {
			p, ok := ev.Payload.(T)
			if !ok {
				t.Fatalf("%s payload is %T", ty, ev.Payload)
			}
			return p, true
		}
	}
	return zero, false
}

func TestTitleIsGeneratedOffTheTokenPathAndAnnouncedOnTheStream(t *testing.T) {
	h := newHarness(t, withTitles)
	answersFor(h.provider, 0, reply("Title: \"Trip to Lisbon\"."), providertest.Script{})
	sess := h.newSession()
	evs := h.ask(sess, "Où dormir à Lisbonne en mai, et pour combien ?").all()
	if f := finished(t, evs); f.Status != eventbus.StatusCompleted {
		t.Fatalf("answer %+v", f)
	}
	upd, ok := payloadOf[eventbus.SessionUpdated](t, evs, eventbus.TypeSessionUpdated)
	if !ok || upd.Title != "Trip to Lisbon" || upd.TitleSource != "generated" || upd.SessionID != sess {
		t.Fatalf("session.updated %+v (%v) in %v", upd, ok, types(evs))
	}
	if evs[len(evs)-1].Type != eventbus.TypeStreamFinished {
		t.Fatalf("stream.finished is not last: %v", types(evs))
	}
	if got := h.session(sess).Title; got != "Trip to Lisbon" {
		t.Fatalf("session title = %q", got)
	}
	titleReqs := requestsWith(h.provider, titleMarker)
	if len(titleReqs) != 1 || !strings.Contains(lastContent(titleReqs[0]), "Où dormir à Lisbonne") ||
		!strings.Contains(lastContent(titleReqs[0]), "language of the question") {
		t.Fatalf("title requests %d: %q", len(titleReqs), lastContent(titleReqs[0]))
	}
	// A session with a title gets no other.
	evs = h.ask(sess, "Et à Porto ?").all()
	if _, ok := payloadOf[eventbus.SessionUpdated](t, evs, eventbus.TypeSessionUpdated); ok {
		t.Fatalf("a second title on the second question: %v", types(evs))
	}
	if n := len(requestsWith(h.provider, titleMarker)); n != 1 {
		t.Fatalf("%d title requests after two questions, want 1", n)
	}
}

func TestTitleFallsBackToTheTrimmedQuestion(t *testing.T) {
	question := "  How do I configure   the rerank plugin so that it keeps only the six best passages of every search?  "
	want := "How do I configure the rerank plugin so that it keeps only…"
	for _, tc := range []struct {
		name  string
		title providertest.Script
		edit  func(*config.Config)
	}{
		{"the model fails", failed, func(*config.Config) {}},
		{"the model says nothing", reply("  \n "), func(*config.Config) {}},
		{"the demo model", providertest.Script{}, func(c *config.Config) {
			c.Models["titler"] = config.Model{Provider: "demo"}
			c.Titles.Model = "titler"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withTitles, tc.edit)
			answersFor(h.provider, 0, tc.title, providertest.Script{})
			sess := h.newSession()
			evs := h.ask(sess, question).all()
			upd, ok := payloadOf[eventbus.SessionUpdated](t, evs, eventbus.TypeSessionUpdated)
			if !ok || upd.Title != want || upd.TitleSource != "fallback" {
				t.Fatalf("session.updated %+v (%v)", upd, ok)
			}
			if got := h.session(sess).Title; got != want {
				t.Fatalf("title = %q, want %q", got, want)
			}
			if f := finished(t, evs); f.Status != eventbus.StatusCompleted {
				t.Fatalf("a failed title failed the answer: %+v", f)
			}
		})
	}
}

func TestTitlesOffKeepTheSessionTitle(t *testing.T) {
	h := newHarness(t) // titles off
	sess := h.newSession()
	evs := h.ask(sess, "Hello?").all()
	if _, ok := payloadOf[eventbus.SessionUpdated](t, evs, eventbus.TypeSessionUpdated); ok {
		t.Fatal("session.updated with titles off")
	}
	if got := h.session(sess).Title; got != "New chat" {
		t.Fatalf("title = %q", got)
	}
}

func TestCompactionSummarisesOlderTurnsAndTheNextPromptSendsTheSummary(t *testing.T) {
	h := newHarness(t, withCompaction(60, 1))
	answersFor(h.provider, 40, providertest.Script{}, reply("SUMMARY: the user asked Q1 and got A1."))
	sess := h.createSession()
	evs1 := h.ask(sess, "Q1 first question?").all()
	if _, ok := payloadOf[eventbus.HistoryCompacted](t, evs1, eventbus.TypeHistoryCompacted); ok {
		t.Fatal("compacted after the first turn, with no history")
	}
	evs2 := h.ask(sess, "Q2 second question?").all()
	hc, ok := payloadOf[eventbus.HistoryCompacted](t, evs2, eventbus.TypeHistoryCompacted)
	if !ok {
		t.Fatalf("no history.compacted after crossing the budget: %v", types(evs2))
	}
	msgs := h.messages(sess)
	if hc.FromMessageID != msgs[0].ID || hc.ToMessageID != msgs[1].ID || hc.Messages != 2 || hc.SummaryID == "" ||
		hc.TokensBefore <= hc.TokensAfter || hc.SessionID != sess {
		t.Fatalf("history.compacted %+v; messages %s, %s", hc, msgs[0].ID, msgs[1].ID)
	}
	if last := evs2[len(evs2)-1]; last.Type != eventbus.TypeStreamFinished {
		t.Fatalf("stream.finished is not last: %v", types(evs2))
	}
	sumReqs := requestsWith(h.provider, summaryMarker)
	if len(sumReqs) != 1 || !strings.Contains(lastContent(sumReqs[0]), "User: Q1 first question?") ||
		!strings.Contains(lastContent(sumReqs[0]), "Assistant: Answer to Q1") ||
		strings.Contains(lastContent(sumReqs[0]), "Q2 second question?") {
		t.Fatalf("summary requests: %d %q", len(sumReqs), lastContent(sumReqs[0]))
	}

	h.ask(sess, "Q3 third question?").all()
	var answer providertest.Request
	for _, r := range h.provider.Requests() {
		if strings.Contains(lastContent(r), "Q3 third question?") {
			answer = r
		}
	}
	prompt := promptMessages(answer)
	if len(prompt) != 4 || prompt[0][0] != "system" ||
		!strings.Contains(prompt[0][1], "Summary of the earlier conversation:\nSUMMARY: the user asked Q1 and got A1.") ||
		prompt[1] != [2]string{"user", "Q2 second question?"} || prompt[2][0] != "assistant" ||
		!strings.HasPrefix(prompt[2][1], "Answer to Q2") || prompt[3] != [2]string{"user", "Q3 third question?"} {
		t.Fatalf("prompt after compaction: %q", prompt)
	}
	for _, m := range prompt {
		if strings.Contains(m[1], "Q1 first question?") {
			t.Fatalf("a summarised turn was sent again: %q", prompt)
		}
	}
}

func TestCompactionFailureLeavesHistoryAsItWas(t *testing.T) {
	h := newHarness(t, withCompaction(60, 1))
	answersFor(h.provider, 40, providertest.Script{}, failed)
	sess := h.createSession()
	h.ask(sess, "Q1 first question?").all()
	evs := h.ask(sess, "Q2 second question?").all()
	if _, ok := payloadOf[eventbus.HistoryCompacted](t, evs, eventbus.TypeHistoryCompacted); ok {
		t.Fatal("history.compacted although the summariser failed")
	}
	if f := finished(t, evs); f.Status != eventbus.StatusCompleted {
		t.Fatalf("a failed summary failed the answer: %+v", f)
	}
	if n := len(requestsWith(h.provider, summaryMarker)); n != 1 {
		t.Fatalf("%d summary requests, want 1", n)
	}
	h.ask(sess, "Q3 third question?").all()
	var prompt [][2]string
	for _, r := range h.provider.Requests() {
		if strings.Contains(lastContent(r), "Q3 third question?") {
			prompt = promptMessages(r)
		}
	}
	var roles []string
	for _, m := range prompt {
		roles = append(roles, m[0])
		if strings.Contains(m[1], "Summary of the earlier conversation") {
			t.Fatalf("a summary was sent: %q", prompt)
		}
	}
	if strings.Join(roles, ",") != "system,user,assistant,user,assistant,user" || prompt[1][1] != "Q1 first question?" {
		t.Fatalf("prompt after a failed compaction: %q", prompt)
	}
}

// BenchmarkTimeToFirstAnswerByteTitles measures a new session's first
// question up to its first answer.delta with titles off and on: on, the
// title request goes to the same fake provider while the answer streams,
// and must not delay it. cpu-ns/op is the process's user+system CPU time
// per question (the title job's own work included when it ran by then).
func BenchmarkTimeToFirstAnswerByteTitles(b *testing.B) {
	provider := providertest.New(b)
	provider.SetResponder(func(r providertest.Request) providertest.Script {
		if strings.Contains(lastContent(r), titleMarker) {
			return reply("Resuming a dropped stream")
		}
		return providertest.Script{Chunks: providertest.Answer("first byte then the rest of the answer", 8), NoRolePreamble: true}
	})
	for _, on := range []bool{false, true} {
		name := "titles-off"
		if on {
			name = "titles-on"
		}
		b.Run(name, func(b *testing.B) {
			cfg := benchConfig(b, provider.BaseURL())
			cfg.Titles.Enabled = on
			srv, _ := benchApp(b, cfg, &http.Client{Transport: &http.Transport{}})
			client := &http.Client{Transport: &http.Transport{}}
			cpu := cpuTime()
			for b.Loop() {
				b.StopTimer()
				session := newSession(b, client, srv.URL, "chat")
				b.StartTimer()
				firstAnswerDelta(b, client, srv.URL, session, "How do I resume a stream after a dropped connection?")
				if on {
					b.StopTimer()
					checkTitle(b, client, srv.URL, session, "Resuming a dropped stream")
					b.StartTimer()
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

func TestARenamedSessionKeepsItsTitle(t *testing.T) {
	h := newHarness(t, withTitles)
	gate := providertest.NewGate()
	title := providertest.Script{Chunks: providertest.Answer("Generated title", 2), HoldHeaders: gate}
	answersFor(h.provider, 0, title, providertest.Script{})
	t.Cleanup(gate.Release)

	// Renamed while its title is being generated: the generated one loses.
	sess := h.newSession()
	s := h.ask(sess, "What is a stream?")
	if err := gate.WaitReached(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	if code := h.call("PATCH", "/api/v1/sessions/"+sess, `{"title":"My own name"}`, nil); code != http.StatusOK {
		t.Fatalf("rename: %d", code)
	}
	gate.Release()
	evs := s.all()
	if _, ok := payloadOf[eventbus.SessionUpdated](t, evs, eventbus.TypeSessionUpdated); ok {
		t.Fatalf("session.updated after a rename: %v", types(evs))
	}
	if got := h.session(sess); got.Title != "My own name" || got.TitleSource != "user" {
		t.Fatalf("session %+v", got)
	}

	// Named at creation: no title is generated at all.
	before := len(requestsWith(h.provider, titleMarker))
	named := h.createSession() // {"title":"test"}
	evs = h.ask(named, "And a resume?").all()
	if _, ok := payloadOf[eventbus.SessionUpdated](t, evs, eventbus.TypeSessionUpdated); ok ||
		len(requestsWith(h.provider, titleMarker)) != before || h.session(named).Title != "test" {
		t.Fatalf("a session named at creation got a title: %v, %q", types(evs), h.session(named).Title)
	}
}

// checkTitle fails unless the session's title is want (the stream of its
// first answer has ended, so its title job has too).
func checkTitle(b *testing.B, client *http.Client, base, session, want string) {
	b.Helper()
	resp, err := client.Get(base + "/api/v1/sessions/" + session)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var s handler.SessionJSON
	if err := jsonDecode(resp, &s); err != nil || s.Title != want {
		b.Fatalf("session title %q (%v), want %q", s.Title, err, want)
	}
}
