package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"sync"
	"time"

	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/tools"
)

// stableAfter is how long a connection must last for the backoff to start
// over: a server that dies right after starting backs off further.
const stableAfter = 10 * time.Second

// link is the connection to one configured server. Its goroutine (run)
// connects, lists the tools, waits for the session to end and reconnects;
// stop ends it.
type link struct {
	cfg  Server
	opts Options
	log  *zap.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
	relist chan struct{} // the server said its tools changed

	mu       sync.Mutex
	session  *mcp.ClientSession // nil while disconnected
	up       chan struct{}      // closed while a session is up; replaced when it ends
	tools    map[string]*remoteTool
	connects int
}

func startLink(cfg Server, opts Options, log *zap.Logger) *link {
	ctx, cancel := context.WithCancel(context.Background())
	l := &link{cfg: cfg, opts: opts, log: log, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		relist: make(chan struct{}, 1), up: make(chan struct{})}
	go l.run()
	return l
}

// stop closes the connection and waits for the goroutine to end.
func (l *link) stop() {
	l.cancel()
	<-l.done
}

func (l *link) run() {
	defer close(l.done)
	backoff := l.opts.MinBackoff
	for {
		start := time.Now()
		err := l.session1()
		if l.ctx.Err() != nil {
			return
		}
		if time.Since(start) > stableAfter {
			backoff = l.opts.MinBackoff
		}
		l.log.Warn("MCP server unavailable; reconnecting", zap.Error(err), zap.Duration("in", backoff))
		select {
		case <-time.After(backoff):
		case <-l.ctx.Done():
			return
		}
		backoff = min(backoff*2, l.opts.MaxBackoff)
	}
}

// session1 runs one session: connect, list the tools, serve until the
// session ends. It returns why it ended.
func (l *link) session1() error {
	cctx, cancel := context.WithTimeout(l.ctx, l.cfg.ConnectTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "chatpipe", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case l.relist <- struct{}{}:
			default: // a re-list is already due
			}
		},
	})
	transport, release, err := l.transport()
	if err != nil {
		return err
	}
	defer release()
	sess, err := client.Connect(cctx, transport, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	ended := make(chan struct{})
	go func() { _ = sess.Wait(); close(ended) }()
	defer func() {
		l.setDown()
		_ = sess.Close()
		<-ended
	}()
	if err := l.list(cctx, sess); err != nil {
		return err
	}
	l.mu.Lock()
	l.session = sess
	l.connects++
	close(l.up)
	n := l.connects
	l.mu.Unlock()
	l.log.Info("MCP server connected", zap.Int("tools", len(l.toolList())), zap.Int("connection", n))
	for {
		select {
		case <-ended:
			return errors.New("the server closed the connection")
		case <-l.ctx.Done():
			return l.ctx.Err()
		case <-l.relist:
			lctx, cancel := context.WithTimeout(l.ctx, l.cfg.ConnectTimeout)
			err := l.list(lctx, sess)
			cancel()
			if err != nil {
				l.log.Warn("re-listing the MCP server's tools failed", zap.Error(err))
			} else {
				l.log.Info("MCP server's tools changed", zap.Strings("tools", toolNames(l.toolList())))
			}
		}
	}
}

// setDown marks the link disconnected: calls wait for the next session.
func (l *link) setDown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.session != nil {
		l.session = nil
		l.up = make(chan struct{})
	}
}

// drop ends sess after a call found its connection broken, if it is still
// the live session: run then reconnects, and calls wait for the new one
// instead of failing on the dead one.
func (l *link) drop(sess *mcp.ClientSession) {
	l.mu.Lock()
	live := l.session == sess
	l.mu.Unlock()
	if live {
		l.setDown()
		_ = sess.Close()
	}
}

// transport builds the SDK transport of the configured kind.
// The returned func releases what the transport kept (idle connections).
func (l *link) transport() (mcp.Transport, func(), error) {
	switch l.cfg.Transport {
	case TransportStdio:
		cmd := exec.Command(l.cfg.Command, l.cfg.Args...)
		cmd.Env = append(os.Environ(), l.cfg.Env...)
		cmd.Stderr = zap.NewStdLog(l.log.Named("stderr")).Writer()
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, func() {}, nil
	case TransportHTTP:
		rt := http.DefaultTransport.(*http.Transport).Clone()
		return &mcp.StreamableClientTransport{Endpoint: l.cfg.URL, MaxRetries: 1,
			HTTPClient: &http.Client{Transport: headerTransport{base: rt, headers: l.cfg.Headers}}}, rt.CloseIdleConnections, nil
	default:
		return nil, nil, fmt.Errorf("unknown transport %q", l.cfg.Transport)
	}
}

// list reads the server's tools and keeps the allowed ones.
func (l *link) list(ctx context.Context, sess *mcp.ClientSession) error {
	found := map[string]*remoteTool{}
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
		if !l.cfg.allows(t.Name) {
			continue
		}
		info, err := toolInfo(l.cfg.Name, t)
		if err != nil {
			l.log.Warn("MCP tool left out: its input schema cannot be read", zap.String("tool", t.Name), zap.Error(err))
			continue
		}
		found[t.Name] = &remoteTool{link: l, name: t.Name, info: info,
			timeout: l.cfg.callTimeout(t.Name), approval: l.cfg.needsApproval(t.Name)}
	}
	l.mu.Lock()
	l.tools = found
	l.mu.Unlock()
	return nil
}

// toolInfo describes an MCP tool to the model, passing its input schema
// through unchanged.
func toolInfo(server string, t *mcp.Tool) (*schema.ToolInfo, error) {
	info := &schema.ToolInfo{Name: tools.ModelName(server, t.Name), Desc: t.Description}
	if info.Desc == "" {
		info.Desc = t.Title
	}
	if t.InputSchema != nil {
		raw, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, err
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		info.ParamsOneOf = schema.NewParamsOneOfByJSONSchema(&s)
	}
	return info, nil
}

func (l *link) tool(name string) (*remoteTool, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.tools[name]
	return t, ok
}

func (l *link) toolList() []*remoteTool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*remoteTool, 0, len(l.tools))
	for _, t := range l.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// current returns the live session, waiting for one (a server being
// restarted) at most until ctx ends or connect_timeout passes.
func (l *link) current(ctx context.Context) (*mcp.ClientSession, error) {
	wait := time.NewTimer(l.cfg.ConnectTimeout)
	defer wait.Stop()
	for {
		l.mu.Lock()
		sess, up := l.session, l.up
		l.mu.Unlock()
		if sess != nil {
			return sess, nil
		}
		select {
		case <-up:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.ctx.Done():
			return nil, fmt.Errorf("the MCP server %s is no longer configured", l.cfg.Name)
		case <-wait.C:
			return nil, fmt.Errorf("the MCP server %s is not reachable right now; try again later", l.cfg.Name)
		}
	}
}

func toolNames(list []*remoteTool) []string {
	out := make([]string, len(list))
	for i, t := range list {
		out[i] = t.name
	}
	return out
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}
