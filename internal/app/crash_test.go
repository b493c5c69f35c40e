package app_test

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

// outsideRead reads the database file from another process, as an
// operator's check or a backup tool would, and returns what it printed.
func outsideRead(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// The way answers were lost: while a server runs on its SQLite file, an
// outside process (the sqlite3 shell, Python's sqlite3) reads the file
// and exits; the server keeps answering (every answer acknowledged and
// visible), then dies by SIGKILL. After a restart every acknowledged
// answer must still be there.
func TestOutsideSQLiteReadersWhileServingLoseNoAnswerAcrossACrash(t *testing.T) {
	provider := providertest.New(t)
	provider.SetDefault(providertest.Script{Chunks: providertest.Answer("an acknowledged answer", 3)})
	dbPath := filepath.Join(t.TempDir(), "data", "chatpipe.db")
	start := func() *harness {
		addr := freeAddr(t)
		return startProcess(t, processEnv(provider, addr, "CHATPIPE_STORAGE_SQLITE_PATH="+dbPath), addr).harness(provider)
	}
	h := start()
	session := h.createSession()
	asked := 0
	ask := func(n int) {
		for range n {
			asked++
			var msg struct{ Status, Content string }
			body := fmt.Sprintf(`{"content":"question %d","stream":false}`, asked)
			if code := h.call("POST", "/api/v1/sessions/"+session+"/messages", body, &msg); code != http.StatusOK || msg.Status != "completed" {
				t.Fatalf("answer %d: %d %+v", asked, code, msg)
			}
		}
	}
	ask(3)
	if got := outsideRead(t, "sqlite3", dbPath, "pragma integrity_check"); got != "ok" {
		t.Fatalf("integrity_check = %q", got)
	}
	ask(3)
	py := `import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); print(c.execute("select count(*) from messages").fetchone()[0]); c.close()`
	if got := outsideRead(t, "python3", "-c", py, dbPath); got != "12" {
		t.Errorf("python3 counts %s messages, want 12", got)
	}
	ask(3)
	if got := len(h.messages(session)); got != 2*asked {
		t.Fatalf("%d messages visible before the crash, want %d", got, 2*asked)
	}
	h.kill()

	h = start()
	msgs := h.messages(session)
	if len(msgs) != 2*asked {
		t.Fatalf("after SIGKILL and restart: %d messages, want %d: acknowledged answers were lost", len(msgs), 2*asked)
	}
	for _, m := range msgs {
		if m.Role == "assistant" && (m.Status != "completed" || m.Content != "an acknowledged answer") {
			t.Errorf("after restart: %+v", m)
		}
	}
	if got := outsideRead(t, "sqlite3", dbPath, "pragma integrity_check"); got != "ok" {
		t.Errorf("integrity_check after restart = %q", got)
	}
}

// `chatpipe backup` run as its own process next to a running server
// copies every answer saved so far; a server started on the copy serves
// them, and the running server loses nothing.
func TestBackupCommandWhileServingCopiesEveryAnswer(t *testing.T) {
	provider := providertest.New(t)
	provider.SetDefault(providertest.Script{Chunks: providertest.Answer("an answer to keep", 3)})
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "chatpipe.db")
	addr := freeAddr(t)
	h := startProcess(t, processEnv(provider, addr, "CHATPIPE_STORAGE_SQLITE_PATH="+dbPath), addr).harness(provider)
	session := h.createSession()
	for i := range 4 {
		var msg struct{ Status string }
		body := fmt.Sprintf(`{"content":"question %d","stream":false}`, i)
		if code := h.call("POST", "/api/v1/sessions/"+session+"/messages", body, &msg); code != http.StatusOK || msg.Status != "completed" {
			t.Fatalf("answer %d: %d %+v", i, code, msg)
		}
	}
	dest := filepath.Join(dir, "backups", "chatpipe-copy.db")
	backup := exec.Command(chatpipeBinary(t), "backup", dest)
	backup.Dir = dir // no config.yaml: defaults plus the environment
	backup.Env = processEnv(provider, addr, "CHATPIPE_STORAGE_SQLITE_PATH="+dbPath)
	if out, err := backup.CombinedOutput(); err != nil || !strings.Contains(string(out), "backed up") {
		t.Fatalf("chatpipe backup: %v\n%s", err, out)
	}
	if got := outsideRead(t, "sqlite3", dest, "pragma integrity_check"); got != "ok" {
		t.Fatalf("backup integrity_check = %q", got)
	}
	// The running server goes on and keeps what it had.
	var msg struct{ Status string }
	if code := h.call("POST", "/api/v1/sessions/"+session+"/messages", `{"content":"after","stream":false}`, &msg); code != http.StatusOK {
		t.Fatalf("answer after the backup: %d", code)
	}
	if got := len(h.messages(session)); got != 10 {
		t.Fatalf("running server: %d messages, want 10", got)
	}
	h.kill()

	addr = freeAddr(t)
	restored := startProcess(t, processEnv(provider, addr, "CHATPIPE_STORAGE_SQLITE_PATH="+dest), addr).harness(provider)
	msgs := restored.messages(session)
	if len(msgs) != 8 {
		t.Fatalf("server on the backup: %d messages, want the 8 saved before it", len(msgs))
	}
	for _, m := range msgs {
		if m.Role == "assistant" && (m.Status != "completed" || m.Content != "an answer to keep") {
			t.Errorf("restored: %+v", m)
		}
	}
}

// A single server killed with SIGKILL mid-answer: after the restart the
// answer is failed, and it holds the text the client had already seen
// (what the periodic partial saves wrote), not an empty message.
func TestKilledServerKeepsThePartialAnswerTheClientSaw(t *testing.T) {
	provider := providertest.New(t)
	gate := providertest.NewGate()
	defer gate.Release()
	words := make([]string, 320)
	chunks := make([]providertest.Chunk, len(words))
	for i := range words {
		words[i] = fmt.Sprintf("w%d ", i)
		chunks[i] = providertest.Chunk{Content: words[i]}
	}
	provider.Enqueue(providertest.Script{Chunks: chunks, Hold: gate, HoldAfter: 280})
	dbPath := filepath.Join(t.TempDir(), "chatpipe.db")
	start := func() *harness {
		addr := freeAddr(t)
		return startProcess(t, processEnv(provider, addr, "CHATPIPE_STORAGE_SQLITE_PATH="+dbPath,
			"CHATPIPE_STREAM_PARTIAL_SAVE_INTERVAL=200ms"), addr).harness(provider)
	}
	h := start()
	session := h.createSession()
	s := h.ask(session, "a long answer, please")
	id := s.messageID()
	if err := gate.WaitReached(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	deltas := 0
	for seen.String() != strings.Join(words[:280], "") {
		ev, ok := s.next()
		if !ok {
			t.Fatalf("stream ended after %d deltas", deltas)
		}
		if ev.Type == eventbus.TypeAnswerDelta {
			seen.WriteString(ev.Text)
			deltas++
		}
	}
	// The provider is stalled; within the save interval the server has
	// written everything streamed so far (visible through the API).
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := h.message(session, id)
		if m.Status != "streaming" {
			t.Fatalf("before the crash: %+v", m)
		}
		if m.Content == seen.String() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d deltas the saved partial answer is %d bytes, the client saw %d", deltas, len(m.Content), seen.Len())
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.kill()

	h = start()
	m := h.message(session, id)
	if m.Status != "failed" || m.Content != seen.String() {
		t.Fatalf("after SIGKILL and restart: status %q, %d bytes of content; want failed with the %d bytes (%d deltas) the client saw",
			m.Status, len(m.Content), seen.Len(), deltas)
	}
}

// With only the delta count configured, the partial answer is saved every
// N deltas: a stalled answer shows the text up to the last multiple of N,
// and the final save then replaces it with the whole answer.
func TestPartialSavesEveryNDeltas(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.Stream.PartialSaveDeltas = 10
		c.Stream.PartialSaveInterval = 0
	})
	gate := providertest.NewGate()
	defer gate.Release()
	var chunks []providertest.Chunk
	var text strings.Builder
	for i := range 30 {
		w := fmt.Sprintf("w%d ", i)
		chunks = append(chunks, providertest.Chunk{Content: w})
		text.WriteString(w)
	}
	h.provider.Enqueue(providertest.Script{Chunks: chunks, Hold: gate, HoldAfter: 25})
	session := h.createSession()
	s := h.ask(session, "q")
	id := s.messageID()
	if err := gate.WaitReached(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	streamed := strings.Join(strings.SplitAfter(text.String(), " ")[:25], "")
	s.until(func(e event) bool { return e.Type == eventbus.TypeAnswerDelta && e.Text == "w24 " })
	// No timer: the saves come from the count. A save is due once 10
	// deltas arrived since the last save's snapshot, and writes whatever
	// has arrived when it runs, so once the saver caught up at most 9 of
	// the 25 streamed deltas are unsaved: at least the first 16 words are
	// saved while the provider stalls. (Not "the first 20": a slow first
	// save may snapshot 16 deltas, and the 9 after it nudge no second one.)
	deadline := time.Now().Add(10 * time.Second)
	for {
		saved := h.message(session, id).Content
		if !strings.HasPrefix(streamed, saved) {
			t.Fatalf("saved while streaming: %q; want a prefix of what was streamed", saved)
		}
		if strings.Contains(saved, "w15 ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("saved while streaming: %q; want at least the first 16 deltas", saved)
		}
		time.Sleep(20 * time.Millisecond)
	}
	gate.Release()
	s.all()
	h.waitDone(id)
	if m := h.message(session, id); m.Status != "completed" || m.Content != text.String() {
		t.Fatalf("final: %+v", m)
	}
}
