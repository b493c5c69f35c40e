package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	module   = "github.com/chatpipe/chatpipe/"
	pipeline = module + "pipeline"
)

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Error      *struct{ Err string }
}

// graph is the import graph of the whole module and its dependencies.
type graph map[string]pkg

var (
	loadOnce sync.Once
	loaded   graph
	loadErr  error
)

// load lists every package of the module with its dependencies, once per
// test binary (one `go list` run serves every test).
func load(t *testing.T) graph {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = list(module + "...") })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}

func list(pattern string) (graph, error) {
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Imports,Error", pattern)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New("go list: " + err.Error() + ": " + stderr.String())
	}
	g := graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		if p.Error != nil {
			return nil, errors.New("go list " + p.ImportPath + ": " + p.Error.Err)
		}
		g[p.ImportPath] = p
	}
	return g, nil
}

// under lists the module's packages at path and below it.
func (g graph) under(path string) []string {
	var out []string
	for p := range g {
		if p == module+path || strings.HasPrefix(p, module+path+"/") {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// pathTo returns an import chain from `from` to `to` that avoids the
// packages in via (nil when there is none), shortest first.
func (g graph) pathTo(from, to string, avoid ...string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var chain []string
			for p := cur; p != ""; p = prev[p] {
				chain = append(chain, strings.TrimPrefix(p, module))
			}
			slices.Reverse(chain)
			return chain
		}
		for _, next := range g[cur].Imports {
			if _, seen := prev[next]; seen || slices.Contains(avoid, next) {
				continue
			}
			prev[next] = cur
			queue = append(queue, next)
		}
	}
	return nil
}

// The services the chain uses must not import it: they share types with
// it through the leaf packages instead.
func TestServicesDoNotImportTheChain(t *testing.T) {
	g := load(t)
	var services []string
	for _, dir := range []string{"internal/llm", "internal/knowledge", "internal/cache", "internal/history", "internal/stream"} {
		found := g.under(dir)
		if len(found) == 0 {
			t.Fatalf("no package under %s: the list of services is out of date", dir)
		}
		services = append(services, found...)
	}
	for _, p := range services {
		if chain := g.pathTo(p, pipeline); chain != nil {
			t.Errorf("%s imports the chain: %s", strings.TrimPrefix(p, module), strings.Join(chain, " → "))
		}
	}
}

// handler starts generations through internal/run, which runs the chain;
// it must not reach pipeline any other way (for shared types, say).
func TestHandlerReachesTheChainOnlyThroughRun(t *testing.T) {
	g := load(t)
	handler := module + "handler"
	if _, ok := g[handler]; !ok {
		t.Fatal("handler not listed")
	}
	if slices.Contains(g[handler].Imports, pipeline) {
		t.Error("handler imports pipeline")
	}
	if chain := g.pathTo(handler, pipeline, module+"internal/run"); chain != nil {
		t.Errorf("handler reaches the chain around internal/run: %s", strings.Join(chain, " → "))
	}
}

// The leaf packages import the standard library, eino's schema and model
// packages and eventbus only, so any package can import them without
// pulling in anything else of ours.
func TestLeafPackagesImportOnlyLeaves(t *testing.T) {
	g := load(t)
	allowed := []string{
		"github.com/cloudwego/eino/schema",
		"github.com/cloudwego/eino/components/model",
		module + "eventbus",
	}
	for _, leaf := range []string{"retrieval", "chatmodel", "conversation", "sharedcache", "approval", "remotetool"} {
		p, ok := g[module+"internal/"+leaf]
		if !ok {
			t.Errorf("leaf package internal/%s not found", leaf)
			continue
		}
		for _, imp := range p.Imports {
			if !g[imp].Standard && !slices.Contains(allowed, imp) {
				t.Errorf("leaf internal/%s imports %s", leaf, imp)
			}
		}
	}
}
