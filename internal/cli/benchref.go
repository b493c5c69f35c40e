package cli

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	_ "modernc.org/sqlite" // the SQLite driver chatpipe uses

	"github.com/chatpipe/chatpipe/internal/llm"
)

func init() {
	Register(Command{
		Name:    "bench-reference",
		Summary: "serve a minimal server of the bench's contract (the demo reply, two SQLite writes a turn), to compare chatpipe with",
		Run:     runBenchReference,
	})
}

const benchReferenceUsage = `usage: chatpipe bench-reference [flags]

Serves the smallest server that answers what chatpipe bench asks, the
simplest way: POST /api/v1/sessions creates a session, POST
/api/v1/sessions/ID/messages saves the question (one SQLite write), streams
the demo model's thinking and answer as SSE frames, one word every
-chunk-delay, and saves the answer (the second write). One goroutine per
request (net/http's), one SQLite connection, no pipeline, no stream store
(no resume), no auth. Run chatpipe bench against it and against chatpipe
with the same -chunk-delay (config: models.default.chunk_delay) to see
what chatpipe costs above the minimum.

flags:
`

func runBenchReference(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chatpipe bench-reference", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, benchReferenceUsage); fs.PrintDefaults() }
	addr := fs.String("addr", "127.0.0.1:8081", "listen address")
	path := fs.String("db", "./data/bench-reference.db", "SQLite database file (created; the reference's own, not chatpipe's)")
	delay := fs.Duration("chunk-delay", 30*time.Millisecond, "pause before each streamed chunk, as the demo model's chunk_delay")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return ErrUsage
	}
	db, err := openReferenceDB(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newBenchReference(db, *delay), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "chatpipe bench-reference: serving on http://%s (chunk delay %s)\n", ln.Addr(), *delay)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }() // owned here: Shutdown ends it, errc is awaited
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serveErr := <-errc; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

// openReferenceDB opens the reference's SQLite file with chatpipe's
// settings (WAL, synchronous NORMAL, one writer connection).
func openReferenceDB(path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	_, err = db.Exec(`CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, title TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
  content TEXT NOT NULL, thinking TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL)`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("creating the reference's tables in %s: %w", path, err)
	}
	return db, nil
}

// benchReference is the minimal server's state.
type benchReference struct {
	db    *sql.DB
	delay time.Duration
}

// newBenchReference returns the reference's routes, with the process's
// CPU and memory at /metrics for a bench run without -pid.
func newBenchReference(db *sql.DB, delay time.Duration) http.Handler {
	r := &benchReference{db: db, delay: delay}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("POST /api/v1/sessions", r.createSession)
	mux.HandleFunc("POST /api/v1/sessions/{id}/messages", r.ask)
	return mux
}

func referenceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (r *benchReference) createSession(w http.ResponseWriter, req *http.Request) {
	var in struct{ Title string }
	if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&in); err != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	id := referenceID()
	if _, err := r.db.ExecContext(req.Context(), `INSERT INTO sessions (id, title) VALUES (?, ?)`, id, in.Title); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]string{"id": id, "title": in.Title})
}

// referenceFrame is one SSE event's data.
type referenceFrame struct {
	Seq      int64  `json:"seq"`
	Type     string `json:"type"`
	StreamID string `json:"stream_id"`
	Content  string `json:"content,omitempty"`
	Status   string `json:"status,omitempty"`
}

// ask saves the question, streams the demo reply and saves the answer.
// The generation runs in the request's goroutine but does not stop when
// the client leaves: its writes just fail, and the answer is still saved.
func (r *benchReference) ask(w http.ResponseWriter, req *http.Request) {
	session := req.PathValue("id")
	var in struct{ Content string }
	if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&in); err != nil || in.Content == "" {
		http.Error(w, "a JSON body with content is required", http.StatusBadRequest)
		return
	}
	ctx := context.WithoutCancel(req.Context())
	answerID := referenceID()
	_, err := r.db.ExecContext(ctx, `INSERT INTO messages (id, session_id, role, content, created_at) VALUES (?, ?, 'user', ?, ?)`,
		referenceID(), session, in.Content, time.Now().UnixMilli())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	var seq int64
	send := func(typ, content, status string) {
		seq++
		data, _ := json.Marshal(referenceFrame{Seq: seq, Type: typ, StreamID: answerID, Content: content, Status: status})
		_, _ = fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", strconv.FormatInt(seq, 10), typ, data)
		_ = rc.Flush()
	}
	send("stream.started", "", "")
	thinking, answer := llm.DemoReply(in.Content)
	timer := time.NewTimer(r.delay)
	defer timer.Stop()
	for _, block := range []struct{ name, text string }{{"thinking", thinking}, {"answer", answer}} {
		send(block.name+".start", "", "")
		for _, word := range strings.SplitAfter(block.text, " ") {
			if word == "" {
				continue
			}
			timer.Reset(r.delay)
			<-timer.C
			send(block.name+".delta", word, "")
		}
		send(block.name+".end", "", "")
	}
	_, err = r.db.ExecContext(ctx, `INSERT INTO messages (id, session_id, role, content, thinking, created_at) VALUES (?, ?, 'assistant', ?, ?, ?)`,
		answerID, session, answer, thinking, time.Now().UnixMilli())
	status := "completed"
	if err != nil {
		status = "failed"
	}
	send("stream.finished", "", status)
}
