package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/internal/sseclient"
)

// longAnswer is a script long enough to cut many times while it streams.
func longAnswer(words int) (providertest.Script, string) {
	var b strings.Builder
	for i := range words {
		fmt.Fprintf(&b, "w%03d ", i)
	}
	answer := b.String()
	chunks := append(providertest.ReasoningContent("a short plan", 3), providertest.Answer(answer, words)...)
	return providertest.Script{Chunks: chunks, Delay: 2 * time.Millisecond}, answer // still streaming while the test cuts and resumes
}

// Cutting the connection after every k-th event and resuming — by
// EventSource's Last-Event-ID or by ?after= — yields exactly the original
// sequence: no gap, no duplicate.
func TestResumeAfterCutAtEveryKthEventHasNoGapOrDuplicate(t *testing.T) {
	for _, via := range []string{"Last-Event-ID", "after"} {
		for _, k := range []int{1, 2, 5, 17} {
			t.Run(fmt.Sprintf("%s/k=%d", via, k), func(t *testing.T) {
				h := newHarness(t)
				script, answer := longAnswer(80)
				h.provider.Enqueue(script)
				session := h.createSession()

				s := h.ask(session, "q")
				id := s.messageID()
				var got []event
				read := func(s *sse) bool {
					for range k {
						ev, ok := s.next()
						if !ok {
							t.Fatalf("stream ended without stream.finished after %d events", len(got))
						}
						got = append(got, ev)
						if ev.Type == eventbus.TypeStreamFinished {
							return true
						}
					}
					return false
				}
				done := read(s)
				s.close()
				for reconnects := 0; !done; reconnects++ {
					if reconnects > 1000 {
						t.Fatal("too many reconnects")
					}
					last := got[len(got)-1].ID
					var r *sse
					if via == "after" {
						r = h.open("GET", "/api/v1/streams/"+id+"?after="+last, "")
					} else {
						r = h.open("GET", "/api/v1/streams/"+id+"?after=0", "", "Last-Event-ID", last)
					}
					if r.resp.StatusCode != http.StatusOK {
						t.Fatalf("resume: %d", r.resp.StatusCode)
					}
					done = read(r)
					r.close()
				}
				checkSeqs(t, got, 1)
				if text(got, eventbus.TypeAnswerDelta) != answer {
					t.Fatalf("answer across reconnects = %q", text(got, eventbus.TypeAnswerDelta))
				}
				// The union is the original: a full replay of the finished
				// stream is identical, event for event.
				full := h.open("GET", "/api/v1/streams/"+id, "").all()
				if len(full) != len(got) {
					t.Fatalf("replay has %d events, resumed reading had %d", len(full), len(got))
				}
				for i := range full {
					if full[i].Seq != got[i].Seq || full[i].Type != got[i].Type || full[i].Text != got[i].Text {
						t.Fatalf("event %d differs: %+v vs %+v", i, full[i], got[i])
					}
				}
			})
		}
	}
}

func TestResumeOfAFinishedStream(t *testing.T) {
	h := newHarness(t)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("done already", 2)})
	s := h.ask(h.createSession(), "q")
	evs := s.all()
	id := s.messageID()
	last := evs[len(evs)-1].ID

	replay := h.open("GET", "/api/v1/streams/"+id+"?after=2", "").all()
	checkSeqs(t, replay, 3)
	if len(replay) != len(evs)-2 {
		t.Fatalf("replay after 2: %d events, want %d", len(replay), len(evs)-2)
	}
	// Nothing left: 204 tells an EventSource to stop reconnecting.
	resp := h.do(context.Background(), "GET", "/api/v1/streams/"+id, "", "Last-Event-ID", last)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("resume at the end: %d, want 204", resp.StatusCode)
	}
}

func TestResumeBeyondTheReplayWindowAsksForResync(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.Stream.MaxEvents = 5 })
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("one two three four five six seven eight", 8)})
	s := h.ask(h.createSession(), "q")
	s.all()
	r := h.open("GET", "/api/v1/streams/"+s.messageID()+"?after=1", "")
	frames, err := sseclient.ReadAll(r.resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 1 || frames[0].Event != "resync_required" || frames[0].HasID ||
		!strings.Contains(frames[0].Data, s.messageID()) {
		t.Fatalf("frames = %+v", frames)
	}
}

// After a restart the in-memory window is gone, but the message is saved:
// a resuming client is told to resync and reload it.
func TestResumeAfterRestartAsksForResyncAndTheMessageIsSaved(t *testing.T) {
	provider := providertest.New(t)
	cfg := baseConfig(t, provider)
	provider.Enqueue(providertest.Script{Chunks: providertest.Answer("persisted", 2)})
	h1 := startHarness(t, provider, cfg, "")
	session := h1.createSession()
	s := h1.ask(session, "q")
	s.all()
	h1.srv.Close()
	if err := h1.app.Close(); err != nil {
		t.Fatal(err)
	}

	h2 := startHarness(t, provider, cfg, "")
	r := h2.open("GET", "/api/v1/streams/"+s.messageID(), "")
	body, _ := io.ReadAll(r.resp.Body)
	if r.resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "event: resync_required") {
		t.Fatalf("resume after restart: %d %q", r.resp.StatusCode, body)
	}
	if msg := h2.message(session, s.messageID()); msg.Status != "completed" || msg.Content != "persisted" {
		t.Fatalf("saved = %+v", msg)
	}
}

func TestHeartbeatCommentsKeepAnIdleStreamAlive(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.Stream.Heartbeat = time.Second })
	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("slow", 2), Hold: gate, HoldAfter: 0})
	s := h.ask(h.createSession(), "q")
	for {
		f, err := s.rd.Next()
		if err != nil {
			t.Fatalf("stream ended before a heartbeat: %v", err)
		}
		if f.IsComment() && f.Comment == "ping" {
			break
		}
	}
	gate.Release()
	if finished(t, s.all()).Status != eventbus.StatusCompleted {
		t.Fatal("stream did not complete after the heartbeat")
	}
}

// The in-memory store's global budget, through the API: answers beyond
// it push the oldest finished streams out (a resume of one is told to
// resync, and its saved message is whole), the newest replay in full.
func TestStreamStoreGlobalBudgetEvictsOldestFinishedStreams(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.Stream.MaxBytes = 256 << 10
		c.Stream.MemoryMaxBytes = 256 << 10
	})
	chunk := strings.Repeat("x", 4000)
	var chunks []providertest.Chunk
	for range 25 { // about 100 KB of events an answer
		chunks = append(chunks, providertest.Chunk{Content: chunk})
	}
	h.provider.SetDefault(providertest.Script{Chunks: chunks})
	session := h.createSession()
	var ids []string
	for range 6 {
		s := h.ask(session, "q")
		s.all()
		h.waitDone(s.messageID())
		ids = append(ids, s.messageID())
	}
	r := h.open("GET", "/api/v1/streams/"+ids[0]+"?after=1", "")
	frames, err := sseclient.ReadAll(r.resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 1 || frames[0].Event != "resync_required" {
		t.Fatalf("resume of the oldest answer: %d frames, first %+v; want resync_required", len(frames), frames[0])
	}
	if m := h.message(session, ids[0]); m.Status != "completed" || len(m.Content) != 25*len(chunk) {
		t.Fatalf("the evicted answer's saved message: %s, %d bytes", m.Status, len(m.Content))
	}
	evs := h.open("GET", "/api/v1/streams/"+ids[5]+"?after=0", "").all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted || len(text(evs, eventbus.TypeAnswerDelta)) != 25*len(chunk) {
		t.Fatalf("the newest answer does not replay whole: %+v", fin)
	}
	checkSeqs(t, evs, 1)
}
