package app_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/internal/mcpclient/mcptest"
	"github.com/chatpipe/chatpipe/internal/providertest"
)

func TestMain(m *testing.M) {
	mcptest.ServeStdioIfChild() // the MCP tests start this binary as a stdio MCP server
	serveIngestChildIfAsked()   // the killed-mid-ingest test starts it as a server
	goleak.VerifyTestMain(cleanupMain{m})
}

// cleanupMain removes the chatpipe binary the tests built once all ran.
type cleanupMain struct{ *testing.M }

func (c cleanupMain) Run() int {
	code := c.M.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	return code
}

// built is the chatpipe binary, compiled once for every test of the
// package that needs a real server process (one that a SIGKILL can end).
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

func chatpipeBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "chatpipe-bin-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "chatpipe")
		built.out, built.err = exec.Command("go", "build", "-o", built.path, "github.com/chatpipe/chatpipe").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.path
}

// process is a chatpipe server running as a child process.
type process struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string // http://host:port
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// processEnv is the environment of a child server whose "default" model
// is the fake provider, answering in chat mode without sample documents.
func processEnv(provider *providertest.Server, addr string, extra ...string) []string {
	return append(append(os.Environ(),
		"CHATPIPE_SERVER_ADDR="+addr,
		"CHATPIPE_MODELS_DEFAULT_PROVIDER=openai", "CHATPIPE_MODELS_DEFAULT_BASE_URL="+provider.BaseURL(),
		"CHATPIPE_MODELS_DEFAULT_MODEL=fake", "CHATPIPE_MODELS_DEFAULT_RETRIES=0",
		"CHATPIPE_DEFAULT_MODE=chat", "CHATPIPE_KNOWLEDGE_SAMPLE_DOCS=false", "CHATPIPE_LOG_LEVEL=warn"), extra...)
}

// startProcess starts the chatpipe binary with env (no config.yaml:
// defaults plus the environment) and waits until it is ready. It is
// killed at the end of the test if still running.
func startProcess(t *testing.T, env []string, addr string) *process {
	t.Helper()
	cmd := exec.Command(chatpipeBinary(t))
	cmd.Dir = t.TempDir()
	cmd.Env = env
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{t: t, cmd: cmd, base: "http://" + addr}
	t.Cleanup(p.kill)
	return p
}

// kill ends the process with SIGKILL: no shutdown, no final checkpoint.
func (p *process) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = p.cmd.Process.Wait()
}

// harness is a harness whose requests go to the process (no in-process
// app: waitDone and the logs are not available; kill ends the process).
func (p *process) harness(provider *providertest.Server) *harness {
	client := newClient(p.t)
	waitReady(p.t, client, p.base)
	return &harness{t: p.t, provider: provider, client: client, base: p.base, proc: p}
}
