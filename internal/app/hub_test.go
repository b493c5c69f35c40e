package app_test

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// waitHubLen waits until the hub serves n readers.
func waitHubLen(t *testing.T, h *harness, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.app.Hub().Len() != n {
		if time.Now().After(deadline) {
			t.Fatalf("the hub serves %d readers, want %d", h.app.Hub().Len(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A reader that stops reading never holds up the others (the hub's
// writes do not wait on it), is cut once it has taken nothing for
// server.write_timeout, and its answer is generated and saved in full
// all the same.
func TestTheHubCutsAStalledReaderAndServesTheOthers(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.Server.WriteTimeout = time.Second
		c.Stream.MaxBytes = 64 << 20 // the whole answer stays replayable
		c.Stream.MemoryMaxBytes = 256 << 20
	})
	// 24 MB of answer: more than the client's and the server's socket
	// buffers hold (4 MB at most each on Linux).
	word := strings.Repeat("x", 4095) + " "
	big := strings.Repeat(word, 6000)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer(big, 6000)})
	stalledSession, otherSession := h.createSession(), h.createSession()
	stalled := postRaw(t, h.srv.Listener.Addr().String(), "/api/v1/sessions/"+stalledSession+"/messages", `{"content":"Write a lot."}`)
	defer stalled.Close()
	if tcp, ok := stalled.(*net.TCPConn); ok {
		_ = tcp.SetReadBuffer(4096)
	}
	readUntil(t, stalled, "event: stream.started") // then it reads nothing more
	waitHubLen(t, h, 1)
	// The big script is taken before the next one is queued: scripts go
	// to requests in the order they reach the provider, and under load
	// the stalled answer's model call may come after the next question's.
	if err := h.provider.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}

	// Meanwhile another answer streams to its end.
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("A short answer.", 3)})
	evs := h.ask(otherSession, "And something short?").all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted || text(evs, eventbus.TypeAnswerDelta) != "A short answer." {
		t.Fatalf("the other reader got %+v, %q", fin, text(evs, eventbus.TypeAnswerDelta))
	}

	// The stalled reader is cut (the hub lets go of it although the
	// socket's buffers cannot hold its answer): what it can still read
	// (until the kernel gives up on the closed socket) ends before the
	// stream's last event.
	waitHubLen(t, h, 0)
	_ = stalled.SetReadDeadline(time.Now().Add(time.Second))
	rest, err := io.ReadAll(bufio.NewReader(stalled))
	if strings.Contains(string(rest), "event: stream.finished") {
		t.Fatalf("the stalled reader was not cut: it read the whole stream (%d bytes, %v)", len(rest), err)
	}
	// The answer was not: it completed and was saved whole.
	msgs := h.messages(stalledSession)
	last := msgs[len(msgs)-1]
	h.waitDone(last.ID)
	if m := h.message(stalledSession, last.ID); m.Status != "completed" || len(m.Content) != len(big) {
		t.Fatalf("the stalled reader's answer: status %s, %d bytes, want completed, %d", m.Status, len(m.Content), len(big))
	}
}

// A reader that leaves is let go at the next write (an event or a
// heartbeat); its answer goes on and is saved, and can be read again.
func TestTheHubLetsGoOfAReaderThatLeft(t *testing.T) {
	h := newHarness(t)
	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("one two three four", 4), Hold: gate, HoldAfter: 2})
	session := h.createSession()
	conn := postRaw(t, h.srv.Listener.Addr().String(), "/api/v1/sessions/"+session+"/messages", `{"content":"Count to four."}`)
	readUntil(t, conn, "event: answer.delta")
	waitHubLen(t, h, 1)
	conn.Close()
	gate.Release()
	waitHubLen(t, h, 0)
	msgs := h.messages(session)
	id := msgs[len(msgs)-1].ID
	h.waitDone(id)
	evs := h.open("GET", "/api/v1/streams/"+id+"?after=0", "").all()
	if got := text(evs, eventbus.TypeAnswerDelta); got != "one two three four" || finished(t, evs).Status != eventbus.StatusCompleted {
		t.Fatalf("read again: %q, %+v", got, finished(t, evs))
	}
}

// A stream the hub writes is chunked as net/http's are: one that ends
// ends cleanly, and one that is cut (here the hub closing under it, as at
// a shutdown past its grace) shows the client an error, not a clean end.
func TestAHubStreamEndsCleanlyAndACutShows(t *testing.T) {
	h := newHarness(t)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("All of it.", 3)})
	resp := h.do(ctxTimeout(t), "POST", "/api/v1/sessions/"+h.createSession()+"/messages", `{"content":"Say it all."}`)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.Contains(string(body), "event: stream.finished") || len(resp.TransferEncoding) == 0 {
		t.Fatalf("a whole stream: %v, chunked %v, finished %v", err, resp.TransferEncoding, strings.Contains(string(body), "event: stream.finished"))
	}

	gate := providertest.NewGate()
	defer gate.Release()
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("one two three four", 4), Hold: gate, HoldAfter: 2})
	s := h.ask(h.createSession(), "Count to four.")
	s.until(func(e event) bool { return e.Type == eventbus.TypeAnswerDelta })
	waitHubLen(t, h, 1)
	h.app.Hub().Close()
	if _, err := io.ReadAll(s.resp.Body); err == nil {
		t.Fatal("a cut stream read as a whole one")
	}
}

// An HTTP/1.0 client, which knows no chunks, is answered by its handler
// as net/http answers it: the stream, then the connection closes.
func TestAnHTTP10ReaderGetsAStreamWithoutChunks(t *testing.T) {
	h := newHarness(t)
	h.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("Plain and whole.", 3)})
	conn, err := net.Dial("tcp", h.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"content":"Answer an old client."}`
	_, _ = io.WriteString(conn, "POST /api/v1/sessions/"+h.createSession()+"/messages HTTP/1.0\r\nHost: chatpipe\r\n"+
		"Content-Type: application/json\r\nContent-Length: "+itoa(int64(len(body)))+"\r\n\r\n"+body)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, _ := strings.Cut(string(resp), "\r\n\r\n")
	if strings.Contains(strings.ToLower(head), "chunked") || !strings.Contains(rest, "data: {\"seq\":") || !strings.Contains(rest, "event: stream.finished") {
		t.Fatalf("HTTP/1.0 answer:\n%s\n\n%.300s", head, rest)
	}
}
