package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/internal/samples"
	"github.com/chatpipe/chatpipe/internal/sseclient"
)

// readmeMark precedes, on its own line, every README block this test runs
// (```sh) or compares with what the server sent (the stream's ``` output).
const readmeMark = "<!-- tested by TestReadme -->"

// readmeFiles are the files the README's uploads name (-F file=@name).
var readmeFiles = map[string]string{
	"handbook.md": "",                                             // written by the test
	"manual.pdf":  "../docparse/testdata/ghostscript-orchard.pdf", // a real PDF with a text layer
}

// TestReadmeCurlSession runs the README's curl session, as written, against
// a server started from the repository's config.yaml with the offline demo
// model and the sample knowledge base — what `go run .` gives a new user.
// Every command must answer < 400; a `# {…}` line under a command is the
// response the README shows, and the real one must have its fields (and its
// values, except "…" placeholders and timings); the example stream must match
// the real stream of step 2 seq by seq.
func TestReadmeCurlSession(t *testing.T) {
	blocks := readmeBlocks(t)
	if len(blocks) < 3 {
		t.Fatalf("found %d README blocks marked %q; the curl session is not marked", len(blocks), readmeMark)
	}

	cfg, err := config.Load("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Storage.SQLite.Path = filepath.Join(t.TempDir(), "chatpipe.db")
	m := cfg.Models["default"]
	if m.Provider != "demo" {
		t.Fatalf("config.yaml's default model is %q; the README's session is written for the offline demo", m.Provider)
	}
	m.ChunkDelay = 0 // the events are the same, only faster
	cfg.Models["default"] = m
	h := startHarnessWith(t, providertest.New(t), cfg, app.Options{Samples: samples.FS})

	r := &readmeRun{t: t, h: h, vars: map[string]string{}, dir: t.TempDir()}
	r.prepareFiles()
	curls := 0
	for _, b := range blocks {
		if b.lang != "sh" {
			r.compareStream(b.lines)
			continue
		}
		for _, line := range logicalLines(b.lines) {
			switch {
			case strings.HasPrefix(line, "# {"):
				shown, _, _ := strings.Cut(strings.TrimPrefix(line, "# "), "   ← ") // a note may follow
				r.compareJSON(shown)
			case strings.HasPrefix(line, "#") || line == "":
			case strings.HasPrefix(line, "curl "):
				r.curl(line)
				curls++
			case isAssignment(line):
				r.assign(line)
			default:
				t.Fatalf("README line the test cannot run: %q", line)
			}
		}
	}
	if curls < 10 {
		t.Fatalf("ran only %d curl commands", curls)
	}
}

type readmeBlock struct {
	lang  string
	lines []string
}

// readmeBlocks returns the fenced blocks that follow readmeMark.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []readmeBlock
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != readmeMark {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "```") {
			t.Fatalf("README line %d: %s is not followed by a fenced block", i+1, readmeMark)
		}
		b := readmeBlock{lang: strings.TrimPrefix(strings.TrimSpace(lines[i+1]), "```")}
		for i += 2; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
			b.lines = append(b.lines, lines[i])
		}
		out = append(out, b)
	}
	return out
}

// logicalLines joins backslash continuations.
func logicalLines(lines []string) []string {
	var out []string
	cur := ""
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	return out
}

func isAssignment(line string) bool {
	eq := strings.IndexByte(line, '=')
	if eq <= 0 {
		return false
	}
	for _, c := range line[:eq] {
		if !(c == '_' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// readmeRun is the state of the session: the shell variables and the last
// response.
type readmeRun struct {
	t      *testing.T
	h      *harness
	vars   map[string]string
	dir    string
	last   string            // the last command, for messages
	body   []byte            // the last response's body
	header http.Header       // the last response's header
	stream []sseclient.Frame // the frames of the last streamed response, as sent
}

func (r *readmeRun) prepareFiles() {
	for name, src := range readmeFiles {
		data := []byte("# Handbook\n\n## Holidays\n\nEvery employee has 25 days of holiday a year.\n")
		if src != "" {
			var err error
			if data, err = os.ReadFile(src); err != nil {
				r.t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(r.dir, name), data, 0o600); err != nil {
			r.t.Fatal(err)
		}
	}
}

// assign captures a variable the README sets by hand from an earlier
// response ("SESSION=01a2…   # the id from above").
func (r *readmeRun) assign(line string) {
	name := line[:strings.IndexByte(line, '=')]
	switch name {
	case "SESSION", "DOC_ID": // the "id" of the response above
		var v struct{ ID string }
		if err := json.Unmarshal(r.body, &v); err != nil || v.ID == "" {
			r.t.Fatalf("%s: no id in the response of %q: %s", name, r.last, r.body)
		}
		r.vars[name] = v.ID
	case "MESSAGE_ID": // the X-Message-Id header of the ask above
		if r.vars[name] = r.header.Get("X-Message-Id"); r.vars[name] == "" {
			r.t.Fatalf("MESSAGE_ID: no X-Message-Id header on %q", r.last)
		}
	default:
		r.t.Fatalf("README sets $%s; teach TestReadmeCurlSession where its value comes from", name)
	}
}

// words splits a shell line into words: quotes, $VAR and ${VAR}
// expansion (not inside single quotes), and a trailing # comment.
func (r *readmeRun) words(line string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			if quote == c {
				quote = 0
			} else if quote == 0 {
				quote, in = c, true
			} else {
				cur.WriteByte(c)
			}
		case c == '$':
			j := i + 1
			brace := j < len(line) && line[j] == '{'
			if brace {
				j++
			}
			k := j
			for k < len(line) && (line[k] == '_' || line[k] >= 'A' && line[k] <= 'Z') {
				k++
			}
			v, ok := r.vars[line[j:k]]
			if !ok {
				r.t.Fatalf("README uses $%s before setting it: %q", line[j:k], line)
			}
			cur.WriteString(v)
			in = true
			if brace {
				k++
			}
			i = k - 1
		case quote == 0 && (c == ' ' || c == '\t'):
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case quote == 0 && c == '#' && !in:
			return out
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		r.t.Fatalf("unbalanced quote in %q", line)
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// curl runs one curl command of the subset the README uses with Go's client.
func (r *readmeRun) curl(line string) {
	t := r.t
	t.Helper()
	r.last = line
	args := r.words(line)[1:]
	method, url, data := "", "", ""
	var form [][2]string
	header := http.Header{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			if i+1 >= len(args) {
				t.Fatalf("%q: %s needs a value", line, a)
			}
			i++
			return args[i]
		}
		switch {
		case a == "-s" || a == "-N":
		case a == "-X":
			method = next()
		case a == "-d":
			data = next()
		case a == "-H":
			k, v, _ := strings.Cut(next(), ":")
			header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		case a == "-F":
			k, v, _ := strings.Cut(next(), "=")
			form = append(form, [2]string{k, v})
		case strings.HasPrefix(a, "localhost:8080/"):
			url = r.h.url(strings.TrimPrefix(a, "localhost:8080"))
		default:
			t.Fatalf("%q: the test does not know curl's %q", line, a)
		}
	}
	if url == "" {
		t.Fatalf("%q: no localhost:8080 URL", line)
	}
	var body io.Reader
	switch {
	case form != nil:
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, f := range form {
			if name, ok := strings.CutPrefix(f[1], "@"); ok {
				content, err := os.ReadFile(filepath.Join(r.dir, name))
				if err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				w, _ := mw.CreateFormFile(f[0], name)
				_, _ = w.Write(content)
			} else {
				_ = mw.WriteField(f[0], f[1])
			}
		}
		_ = mw.Close()
		body = &buf
		header.Set("Content-Type", mw.FormDataContentType())
	case data != "":
		body = strings.NewReader(data)
		header.Set("Content-Type", "application/x-www-form-urlencoded") // what curl -d sends
	}
	if method == "" {
		method = "GET"
		if body != nil {
			method = "POST"
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := r.h.client.Do(req)
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	defer resp.Body.Close()
	r.header, r.stream = resp.Header, nil
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		rd := sseclient.NewReader(resp.Body)
		for {
			f, err := rd.Next()
			if err != nil {
				break
			}
			if f.Data != "" {
				r.stream = append(r.stream, f)
			}
		}
		r.body = nil
		if len(r.stream) == 0 {
			t.Fatalf("%q: an empty stream", line)
		}
	} else if r.body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if resp.StatusCode >= 400 {
		t.Fatalf("%q: %d %s", line, resp.StatusCode, r.body)
	}
	r.checkResume(req)
	if r.stream == nil && len(r.body) > 0 && !json.Valid(r.body) {
		t.Fatalf("%q: not JSON: %s", line, r.body)
	}
	t.Logf("%s → %d", line, resp.StatusCode)
}

// placeholders turns the README's abridged JSON ("…" for left-out fields
// and items) into JSON.
var placeholders = strings.NewReplacer(",…,", ",", ", …]", "]", ",…}", "}")

// compareJSON checks the last response against the one the README shows.
func (r *readmeRun) compareJSON(shown string) {
	r.t.Helper()
	var want, got any
	if err := json.Unmarshal([]byte(placeholders.Replace(shown)), &want); err != nil {
		r.t.Fatalf("README response %s is not JSON: %v", shown, err)
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		r.t.Fatalf("%q: %v", r.last, err)
	}
	if msg := matchShown("", want, got); msg != "" {
		r.t.Fatalf("README shows %s after %q, the server answered %s: %s", shown, r.last, r.body, msg)
	}
}

// compareStream checks the README's example stream against the last
// streamed response, frame by frame by seq.
func (r *readmeRun) compareStream(lines []string) {
	r.t.Helper()
	bySeq := map[string]sseclient.Frame{}
	for _, f := range r.stream {
		bySeq[f.ID] = f
	}
	if len(bySeq) == 0 {
		r.t.Fatal("the README shows a stream but the command before it did not stream")
	}
	shown := 0
	var id, typ string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "id: "):
			id = strings.TrimPrefix(l, "id: ")
		case strings.HasPrefix(l, "event: "):
			typ = strings.TrimPrefix(l, "event: ")
		case strings.HasPrefix(l, "data: "):
			e, ok := bySeq[id]
			if !ok || e.Event != typ {
				r.t.Fatalf("README shows %s at seq %s; the server sent %q there (%d events)", typ, id, e.Event, len(r.stream))
			}
			var want, got any
			data := strings.TrimPrefix(l, "data: ")
			if err := json.Unmarshal([]byte(placeholders.Replace(data)), &want); err != nil {
				r.t.Fatalf("README frame %s is not JSON: %v", data, err)
			}
			if err := json.Unmarshal([]byte(e.Data), &got); err != nil {
				r.t.Fatalf("frame %s: %v", e.Data, err)
			}
			if msg := matchShown("", want, got); msg != "" {
				r.t.Fatalf("README frame %s; the server sent %s: %s", data, e.Data, msg)
			}
			shown++
		}
	}
	if shown == 0 {
		r.t.Fatal("no frame in the README's stream")
	}
}

// matchShown reports where got lacks or differs from what want shows.
// Strings with "…" are placeholders; timings (ts, *_ms) vary by machine.
func matchShown(path string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path + ": not an object"
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return path + "." + k + ": missing"
			}
			if k == "ts" || strings.HasSuffix(k, "_ms") {
				continue
			}
			if msg := matchShown(path+"."+k, wv, gv); msg != "" {
				return msg
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) < len(w) {
			return path + ": fewer items than shown"
		}
		for i := range w {
			if msg := matchShown(path+"["+itoa(int64(i))+"]", w[i], g[i]); msg != "" {
				return msg
			}
		}
	case string:
		if strings.Contains(w, "…") {
			return ""
		}
		if g, _ := got.(string); g != w {
			return path + ": shown " + w + ", got " + (mustJSON(got))
		}
	default:
		if (mustJSON(want)) != (mustJSON(got)) {
			return path + ": shown " + (mustJSON(want)) + ", got " + (mustJSON(got))
		}
	}
	return ""
}

// checkResume asserts that a resume with a cursor (?after=N or
// Last-Event-ID: N) replays from seq N+1 to the stream's end.
func (r *readmeRun) checkResume(req *http.Request) {
	cursor := req.URL.Query().Get("after")
	if c := req.Header.Get("Last-Event-ID"); c != "" {
		cursor = c
	}
	if cursor == "" || !strings.HasPrefix(req.URL.Path, "/api/v1/streams/") {
		return
	}
	n, err := strconv.Atoi(cursor)
	if err != nil {
		r.t.Fatalf("%q: cursor %q", r.last, cursor)
	}
	if len(r.stream) == 0 || r.stream[0].ID != strconv.Itoa(n+1) || r.stream[len(r.stream)-1].Event != "stream.finished" {
		r.t.Fatalf("%q: the replay does not run from seq %d to stream.finished (%d frames)", r.last, n+1, len(r.stream))
	}
}

// TestReadmeAuthKeysExample starts a server with each CHATPIPE_AUTH_KEYS
// example of the README and config.yaml (loaded as the operator would, so
// the minimum key length applies) and calls the API with every key in it.
func TestReadmeAuthKeysExample(t *testing.T) {
	re := regexp.MustCompile("CHATPIPE_AUTH_KEYS=([^\\s`'\"]+)")
	var examples []string
	for _, file := range []string{"../../README.md", "../../config.yaml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			examples = append(examples, m[1])
		}
	}
	if len(examples) == 0 {
		t.Fatal("no CHATPIPE_AUTH_KEYS example found")
	}
	for _, ex := range examples {
		t.Run(ex, func(t *testing.T) {
			t.Setenv("CHATPIPE_AUTH_KEYS", ex)
			cfg, err := config.Load("../../config.yaml")
			if err != nil {
				t.Fatalf("the example is refused: %v", err)
			}
			cfg.Storage.SQLite.Path = filepath.Join(t.TempDir(), "chatpipe.db")
			cfg.Knowledge.SampleDocs = false
			h := startHarnessWith(t, providertest.New(t), cfg, app.Options{})
			if code := h.call("GET", "/api/v1/sessions", "", nil); code != http.StatusUnauthorized {
				t.Fatalf("without a key: %d, want 401", code)
			}
			for _, pair := range strings.Split(ex, ",") {
				_, key, _ := strings.Cut(pair, ":")
				if code := h.as(key).call("GET", "/api/v1/sessions", "", nil); code != http.StatusOK {
					t.Fatalf("with the key %q: %d", key, code)
				}
			}
		})
	}
}
