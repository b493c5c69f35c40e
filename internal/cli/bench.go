package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"

	"github.com/chatpipe/chatpipe/internal/sseclient"
)

func init() {
	Register(Command{
		Name:    "bench",
		Summary: "ask N questions at once of a running server; print first-token p50/p99, CPU per frame, peak RSS",
		Run:     runBench,
	})
}

const benchUsage = `usage: chatpipe bench [flags]

Creates -streams sessions on a running chatpipe, then asks one question in
each at the same moment (a burst) and reads every stream to its end. Prints
the time from each POST to its first token (thinking or answer) (p50/p90/p99/max), the
server's CPU per streamed frame, and its resident memory at the peak number
of live streams. The server's CPU and memory come from /proc when -pid is
given (the server runs on this machine), otherwise from its Prometheus
metrics (process_cpu_seconds_total, process_resident_memory_bytes).
To hold many streams open at once, serve a demo model with chunk_delay set.

flags:
`

// benchDefaultQuestion is asked in every session unless -question says otherwise.
const benchDefaultQuestion = "What does chatpipe stream, and how do I resume a stream?"

type benchOptions struct {
	server, key, mode, question, metricsPath string
	streams, pid                             int
	timeout                                  time.Duration
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chatpipe bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage); fs.PrintDefaults() }
	var o benchOptions
	fs.StringVar(&o.server, "server", "http://127.0.0.1:8080", "the server's base URL")
	fs.StringVar(&o.key, "key", "", "API key, when the server has auth.keys")
	fs.StringVar(&o.mode, "mode", "chat", "chat mode of the sessions")
	fs.StringVar(&o.question, "question", benchDefaultQuestion, "the question asked in every session")
	fs.IntVar(&o.streams, "streams", 200, "concurrent streams (one session each)")
	fs.IntVar(&o.pid, "pid", 0, "the server's process id, to read its CPU and memory from /proc")
	fs.StringVar(&o.metricsPath, "metrics", "/metrics", "the server's metrics path (when -pid is not given)")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || o.streams < 1 || o.timeout <= 0 {
		fmt.Fprintln(stderr, "chatpipe bench: -streams must be at least 1, -timeout positive, and no arguments follow the flags")
		fs.Usage()
		return ErrUsage
	}
	o.server = strings.TrimRight(o.server, "/")
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	r, err := benchRun(ctx, o)
	if err != nil {
		return err
	}
	r.print(stdout, o)
	if r.failed > 0 {
		return fmt.Errorf("%d of %d streams did not complete", r.failed, o.streams)
	}
	return nil
}

// benchClient speaks to the server under test.
type benchClient struct {
	o    benchOptions
	http *http.Client
}

func (c *benchClient) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.o.server+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.o.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.o.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
	}
	return resp, nil
}

// benchResult is what one burst measured.
type benchResult struct {
	firstToken    []time.Duration // of the streams that sent an answer token
	statuses      map[string]int
	failed        int
	frames        int64
	wall          time.Duration
	cpu           time.Duration // server CPU spent during the burst
	source        string        // where CPU and RSS came from
	rssBase       float64       // bytes, before the burst
	rssPeak       float64       // bytes, the highest sample during the burst
	rssAtPeakLive float64       // bytes, sampled when most streams were live
	peakLive      int64
	firstErr      error
	errCount      int
}

func benchRun(ctx context.Context, o benchOptions) (*benchResult, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: o.streams, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &benchClient{o: o, http: &http.Client{Transport: tr}}
	probe := newServerProbe(c, o)

	sessions, err := benchSessions(ctx, c, o)
	if err != nil {
		return nil, err
	}
	base, err := probe.sample(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the server's CPU and memory: %w", err)
	}
	r := &benchResult{statuses: map[string]int{}, source: probe.source(), rssBase: base.rss, rssPeak: base.rss}

	var live atomic.Int64
	samplerDone := make(chan struct{})
	samplerCtx, stopSampler := context.WithCancel(ctx)
	go func() { // owned here: stopped and awaited below
		defer close(samplerDone)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-samplerCtx.Done():
				return
			case <-t.C:
			}
			n := live.Load()
			s, err := probe.sample(samplerCtx)
			if err != nil {
				continue
			}
			r.rssPeak = max(r.rssPeak, s.rss)
			if n >= r.peakLive && n > 0 {
				r.peakLive, r.rssAtPeakLive = n, s.rss
			}
		}
	}()

	type outcome struct {
		first  time.Duration
		status string
		frames int64
		err    error
	}
	outcomes := make([]outcome, len(sessions))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, id := range sessions {
		wg.Go(func() {
			<-start
			t0 := time.Now()
			var out outcome
			out.first, out.status, out.frames, out.err = benchAsk(ctx, c, id, o.question, t0, &live)
			outcomes[i] = out
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	r.wall = time.Since(t0)
	stopSampler()
	<-samplerDone

	end, err := probe.sample(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the server's CPU and memory: %w", err)
	}
	r.cpu = end.cpu - base.cpu
	r.rssPeak = max(r.rssPeak, end.rss)
	for _, out := range outcomes {
		r.frames += out.frames
		if out.first > 0 {
			r.firstToken = append(r.firstToken, out.first)
		}
		if out.err != nil {
			r.failed++
			if r.firstErr == nil {
				r.firstErr = out.err
			}
			r.errCount++
			continue
		}
		r.statuses[out.status]++
		if out.status != "completed" {
			r.failed++
		}
	}
	return r, nil
}

// benchSessions creates one session per stream before the burst, 16 at a
// time, so the burst measures asking only.
func benchSessions(ctx context.Context, c *benchClient, o benchOptions) ([]string, error) {
	ids := make([]string, o.streams)
	errs := make([]error, o.streams)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			resp, err := c.do(ctx, "POST", "/api/v1/sessions", map[string]string{"mode": o.mode, "title": "bench"})
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			var s struct{ ID string }
			if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || s.ID == "" {
				errs[i] = fmt.Errorf("creating a session: unexpected reply (%v)", err)
				return
			}
			ids[i] = s.ID
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("creating the sessions: %w", firstError(errs))
	}
	return ids, nil
}

func firstError(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// benchAsk asks one question and reads its stream to the end.
func benchAsk(ctx context.Context, c *benchClient, session, question string, t0 time.Time, live *atomic.Int64) (first time.Duration, status string, frames int64, err error) {
	resp, err := c.do(ctx, "POST", "/api/v1/sessions/"+session+"/messages", map[string]string{"content": question})
	if err != nil {
		return 0, "", 0, err
	}
	defer resp.Body.Close()
	live.Add(1)
	defer live.Add(-1)
	rd := sseclient.NewReader(resp.Body)
	for {
		f, err := rd.Next()
		if err != nil {
			return first, "", frames, fmt.Errorf("stream of session %s ended before stream.finished: %w", session, err)
		}
		if !f.HasID {
			continue
		}
		frames++
		switch f.Event {
		case "thinking.delta", "answer.delta":
			if first == 0 {
				first = time.Since(t0)
			}
		case "stream.finished":
			var fin struct{ Status string }
			_ = json.Unmarshal([]byte(f.Data), &fin)
			return first, fin.Status, frames, nil
		}
	}
}

// serverSample is the server's cumulative CPU and its resident memory.
type serverSample struct {
	cpu time.Duration
	rss float64
}

type serverProbe struct {
	c   *benchClient
	o   benchOptions
	mu  sync.Mutex
	fs  procfs.FS
	err error
}

func newServerProbe(c *benchClient, o benchOptions) *serverProbe {
	p := &serverProbe{c: c, o: o}
	if o.pid > 0 {
		p.fs, p.err = procfs.NewFS(procfs.DefaultMountPoint)
	}
	return p
}

func (p *serverProbe) source() string {
	if p.o.pid > 0 {
		return fmt.Sprintf("/proc/%d", p.o.pid)
	}
	return p.o.server + p.o.metricsPath
}

func (p *serverProbe) sample(ctx context.Context) (serverSample, error) {
	if p.o.pid > 0 {
		if p.err != nil {
			return serverSample{}, p.err
		}
		proc, err := p.fs.Proc(p.o.pid)
		if err != nil {
			return serverSample{}, err
		}
		st, err := proc.Stat()
		if err != nil {
			return serverSample{}, err
		}
		return serverSample{cpu: time.Duration(st.CPUTime() * float64(time.Second)), rss: float64(st.ResidentMemory())}, nil
	}
	resp, err := p.c.do(ctx, "GET", p.o.metricsPath, nil)
	if err != nil {
		return serverSample{}, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return serverSample{}, fmt.Errorf("parsing %s: %w", p.o.metricsPath, err)
	}
	value := func(name string) (float64, bool) {
		f, ok := fams[name]
		if !ok || len(f.GetMetric()) == 0 {
			return 0, false
		}
		m := f.GetMetric()[0]
		if m.GetCounter() != nil {
			return m.GetCounter().GetValue(), true
		}
		return m.GetGauge().GetValue(), true
	}
	cpu, ok1 := value("process_cpu_seconds_total")
	rss, ok2 := value("process_resident_memory_bytes")
	if !ok1 || !ok2 {
		return serverSample{}, fmt.Errorf("%s has no process_cpu_seconds_total / process_resident_memory_bytes (give -pid when the server runs here)", p.o.metricsPath)
	}
	return serverSample{cpu: time.Duration(cpu * float64(time.Second)), rss: rss}, nil
}

func (r *benchResult) print(w io.Writer, o benchOptions) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
	mib := func(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
	fmt.Fprintf(w, "chatpipe bench: %d streams at once, mode %s, %s\n", o.streams, o.mode, o.server)
	var st []string
	for k, v := range r.statuses {
		st = append(st, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(st)
	fmt.Fprintf(w, "  finished       %s; failed %d\n", strings.Join(st, ", "), r.failed)
	if r.firstErr != nil {
		fmt.Fprintf(w, "  errors         %d, the first: %v\n", r.errCount, r.firstErr)
	}
	if n := len(r.firstToken); n > 0 {
		slices.Sort(r.firstToken)
		q := func(p float64) time.Duration { return r.firstToken[min(n-1, int(p*float64(n)))] }
		fmt.Fprintf(w, "  first token    p50 %s  p90 %s  p99 %s  max %s  (%d streams)\n", ms(q(0.50)), ms(q(0.90)), ms(q(0.99)), ms(r.firstToken[n-1]), n)
	} else {
		fmt.Fprintln(w, "  first token    no stream sent an answer token")
	}
	fmt.Fprintf(w, "  frames         %d in %s (%.0f frames/s)\n", r.frames, r.wall.Round(time.Millisecond), float64(r.frames)/r.wall.Seconds())
	if r.frames > 0 {
		fmt.Fprintf(w, "  server CPU     %s, %.1f µs per frame  (%s)\n", r.cpu.Round(time.Millisecond), float64(r.cpu)/1e3/float64(r.frames), r.source)
	}
	fmt.Fprintf(w, "  server RSS     before %s, peak %s", mib(r.rssBase), mib(r.rssPeak))
	if r.peakLive > 0 && r.rssAtPeakLive > r.rssBase {
		fmt.Fprintf(w, "; %s with %d live streams = %.1f KiB per live stream", mib(r.rssAtPeakLive), r.peakLive, (r.rssAtPeakLive-r.rssBase)/1024/float64(r.peakLive))
	}
	fmt.Fprintln(w)
}
