package pipeline

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
)

// recordPlugin logs its before/after steps into a shared trace.
type recordPlugin struct {
	name   string
	events []EventType
	trace  *[]string
	short  bool // return without next()
	fail   *PluginError
	twice  bool
}

func (p *recordPlugin) Name() string        { return p.name }
func (p *recordPlugin) Events() []EventType { return p.events }
func (p *recordPlugin) OnEvent(ctx context.Context, evt EventType, cm *ChatManage, next func() *PluginError) *PluginError {
	*p.trace = append(*p.trace, "before:"+p.name+":"+string(evt))
	if p.fail != nil {
		return p.fail
	}
	if p.short {
		return nil
	}
	err := next()
	if p.twice {
		err = next()
	}
	*p.trace = append(*p.trace, "after:"+p.name)
	return err
}

type eventLog struct {
	mu     sync.Mutex
	events []eventbus.Event
}

func (l *eventLog) Emit(ev eventbus.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *eventLog) stages() []string {
	var out []string
	for _, ev := range l.events {
		if s, ok := ev.Payload.(eventbus.Stage); ok {
			out = append(out, s.Name+":"+s.Status)
		}
	}
	return out
}

func TestChainRunsInConfiguredOrderBeforeAndAfterNext(t *testing.T) {
	var trace []string
	m, err := NewEventManager("chat", []Plugin{
		&recordPlugin{name: "a", events: []EventType{"load_history"}, trace: &trace},
		&recordPlugin{name: "b", events: []EventType{"search", "rerank"}, trace: &trace},
		&recordPlugin{name: "gen", events: []EventType{StageGenerate}, trace: &trace},
	})
	if err != nil {
		t.Fatal(err)
	}
	log := &eventLog{}
	if perr := m.Execute(context.Background(), &ChatManage{Emitter: log}); perr != nil {
		t.Fatal(perr)
	}
	want := "before:a:load_history before:b:search before:b:rerank before:gen:generate after:gen after:b after:b after:a"
	if got := strings.Join(trace, " "); got != want {
		t.Fatalf("trace\n got %s\nwant %s", got, want)
	}
	wantStages := "load_history:started load_history:finished search:started search:finished rerank:started rerank:finished generate:started generate:finished"
	if got := strings.Join(log.stages(), " "); got != wantStages {
		t.Fatalf("stages\n got %s\nwant %s", got, wantStages)
	}
}

func TestShortCircuitSkipsTheRest(t *testing.T) {
	var trace []string
	m, _ := NewEventManager("chat", []Plugin{
		&recordPlugin{name: "cache", events: []EventType{"cache"}, trace: &trace, short: true},
		&recordPlugin{name: "gen", events: []EventType{StageGenerate}, trace: &trace},
	})
	if perr := m.Execute(context.Background(), &ChatManage{Emitter: &eventLog{}}); perr != nil {
		t.Fatal(perr)
	}
	if strings.Join(trace, " ") != "before:cache:cache" {
		t.Fatalf("trace = %v", trace)
	}
}

func TestPluginErrorIsAnErrorAndNamesThePlugin(t *testing.T) {
	cause := errors.New("boom")
	var trace []string
	m, _ := NewEventManager("chat", []Plugin{
		&recordPlugin{name: "gen", events: []EventType{StageGenerate}, trace: &trace,
			fail: &PluginError{Code: CodeProvider, Message: "The provider failed.", Err: cause}},
	})
	log := &eventLog{}
	perr := m.Execute(context.Background(), &ChatManage{Emitter: log})
	var err error = perr
	if !errors.Is(err, cause) {
		t.Fatalf("errors.Is(PluginError, cause) = false")
	}
	var pe *PluginError
	if !errors.As(err, &pe) || pe.Plugin != "gen" || pe.Stage != StageGenerate {
		t.Fatalf("PluginError = %+v", pe)
	}
	if got := strings.Join(log.stages(), " "); got != "generate:started generate:failed" {
		t.Fatalf("stages = %s", got)
	}
}

func TestNextTwiceIsAnError(t *testing.T) {
	var trace []string
	m, _ := NewEventManager("chat", []Plugin{
		&recordPlugin{name: "a", events: []EventType{"x"}, trace: &trace, twice: true},
		&recordPlugin{name: "gen", events: []EventType{StageGenerate}, trace: &trace},
	})
	perr := m.Execute(context.Background(), &ChatManage{Emitter: &eventLog{}})
	if perr == nil || !errors.Is(perr, ErrNextCalledTwice) {
		t.Fatalf("perr = %v", perr)
	}
}

func TestCancelledContextStopsBetweenStages(t *testing.T) {
	var trace []string
	m, _ := NewEventManager("chat", []Plugin{
		&recordPlugin{name: "gen", events: []EventType{StageGenerate}, trace: &trace},
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	perr := m.Execute(ctx, &ChatManage{Emitter: &eventLog{}})
	if perr == nil || perr.Code != CodeCanceled || len(trace) != 0 {
		t.Fatalf("perr = %v trace = %v", perr, trace)
	}
}

func TestChainWithoutGenerateIsRejected(t *testing.T) {
	var trace []string
	_, err := NewEventManager("rag", []Plugin{&recordPlugin{name: "a", events: []EventType{"x"}, trace: &trace}})
	if err == nil || !strings.Contains(err.Error(), "generate") {
		t.Fatalf("err = %v", err)
	}
}

var registerOnce sync.Once

func testGenFactory(trace *[]string) Factory {
	return func(c PluginConfig) (Plugin, error) {
		p := &cfgPlugin{recordPlugin: recordPlugin{name: "test_gen", events: []EventType{StageGenerate}, trace: trace}}
		p.cfg.TopK = 3
		if err := c.Decode(&p.cfg); err != nil {
			return nil, err
		}
		return p, nil
	}
}

type cfgPlugin struct {
	recordPlugin
	cfg struct {
		TopK int `mapstructure:"top_k"`
	}
}

func TestRegistryBuildsWithOverridesAndNamesBadKeys(t *testing.T) {
	var trace []string
	registerOnce.Do(func() { Register("test_gen", testGenFactory(&trace)) })
	sections := map[string]map[string]any{"test_gen": {"top_k": 5}}

	m, err := Build("chat", []ChainEntry{{Name: "test_gen", Overrides: map[string]any{"top_k": "7"}}}, sections)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.links[0].plugin.(*cfgPlugin).cfg.TopK; got != 7 {
		t.Fatalf("top_k = %d, want the mode override 7", got)
	}
	_, err = Build("chat", []ChainEntry{{Name: "test_gen"}}, map[string]map[string]any{"test_gen": {"top_kk": 1}})
	if err == nil || !strings.Contains(err.Error(), "plugins.test_gen") || !strings.Contains(err.Error(), "top_kk") {
		t.Fatalf("typo error = %v", err)
	}
	_, err = Build("chat", []ChainEntry{{Name: "nope"}}, nil)
	if err == nil || !strings.Contains(err.Error(), `unknown plugin "nope"`) {
		t.Fatalf("unknown plugin error = %v", err)
	}
	_, err = Build("chat", []ChainEntry{{Name: "test_gen"}, {Name: "test_gen"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "pipelines.chat[1]") {
		t.Fatalf("duplicate error = %v", err)
	}
}
