package tools_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudwego/eino/schema"
	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type echo struct{ prefix string }

func (e echo) Info() *schema.ToolInfo { return &schema.ToolInfo{Name: "echo", Desc: "Echoes."} }
func (e echo) Run(_ context.Context, _ *tools.Env, args string) (string, error) {
	return e.prefix + args, nil
}

func init() {
	tools.Register("echo", func(c tools.Config) (tools.Tool, error) {
		var cfg struct {
			Prefix string `mapstructure:"prefix"`
		}
		if err := c.Decode(&cfg); err != nil {
			return nil, err
		}
		return echo{cfg.Prefix}, nil
	})
	tools.Register("misnamed", func(tools.Config) (tools.Tool, error) { return echo{}, nil })
}

// A tool list is written like a mode's plugin list; the settings every
// tool has are taken out before the tool's own are decoded.
func TestBuildReadsNamesSettingsAndCommonKeys(t *testing.T) {
	set, err := tools.Build("plugins.agent_loop.tools", "agent", []any{
		map[string]any{"echo": map[string]any{"prefix": "> ", "timeout": "2s", "require_approval": true,
			"description": "Echoes for ACME."}},
		"fetch_document",
	}, tools.Common{Timeout: 30 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, info := range set.Infos() {
		names = append(names, info.Name)
	}
	if !slices.Equal(names, []string{"echo", "fetch_document"}) {
		t.Fatalf("tools = %v", names)
	}
	e, _ := set.Lookup("echo")
	if e.Timeout != 2*time.Second || !e.RequireApproval || e.Info.Desc != "Echoes for ACME." {
		t.Fatalf("echo = %+v", e)
	}
	if e.Tool.Info().Desc != "Echoes." {
		t.Fatal("the configured description changed the tool's own Info")
	}
	if out, _ := e.Tool.Run(t.Context(), nil, "x"); out != "> x" {
		t.Fatalf("tool settings not decoded: %q", out)
	}
	f, _ := set.Lookup("fetch_document")
	if f.Timeout != 30*time.Second || f.RequireApproval {
		t.Fatalf("fetch_document = %+v", f)
	}
}

func TestBuildErrorsNameTheEntry(t *testing.T) {
	for _, tc := range []struct {
		entries []any
		want    string
	}{
		{[]any{"nope"}, `key[0] (nope): unknown tool "nope" (known: echo, fetch_document, knowledge_search, misnamed)`},
		{[]any{"fetch_documnet"}, `key[0] (fetch_documnet): unknown tool "fetch_documnet" (known: echo, fetch_document, knowledge_search, misnamed; did you mean "fetch_document"?)`},
		{[]any{""}, "key[0]: empty tool name"},
		{[]any{42}, "key[0]: want a tool name or {name: {settings}}, got int"},
		{[]any{map[string]any{"a": nil, "b": nil}}, "a mapping with 2 keys"},
		{[]any{map[string]any{"echo": "x"}}, "got string for echo's settings"},
		{[]any{map[string]any{"echo": map[string]any{"prefx": 1}}}, "prefx"},
		{[]any{map[string]any{"echo": map[string]any{"timeout": "-1s"}}}, "key[0] (echo).timeout: must be positive"},
		{[]any{"echo", "echo"}, "key[1] (echo): tool listed twice"},
		{[]any{"misnamed"}, `the tool calls itself "echo", not "misnamed"`},
		{[]any{map[string]any{"knowledge_search": map[string]any{"chain": []any{"no_plugin"}}}}, `unknown plugin "no_plugin"`},
	} {
		_, err := tools.Build("key", "agent", tc.entries, tools.Common{Timeout: time.Second}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.entries, err, tc.want)
		}
	}
}

func TestRegisterRejectsBadNames(t *testing.T) {
	for _, name := range []string{"", "Has Space", "UPPER", "echo"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			tools.Register(name, nil)
		}()
	}
}

func ref(chunk, content string) eventbus.Reference {
	return eventbus.Reference{ChunkID: chunk, DocumentID: "d-" + chunk, Content: content}
}

// Numbers go on across additions; a passage found again keeps its first
// number; concurrent additions never share a number.
func TestReferencesNumberAcrossCalls(t *testing.T) {
	refs := tools.NewReferences([]eventbus.Reference{{Index: 1, ChunkID: "pre", Content: "before"}})
	first := refs.Add([]eventbus.Reference{ref("a", "A"), ref("b", "B")})
	second := refs.Add([]eventbus.Reference{ref("c", "C"), ref("a", "A"), ref("a", "A longer")})
	index := func(rs []eventbus.Reference) string {
		var out []string
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%s%d", r.ChunkID, r.Index))
		}
		return strings.Join(out, " ")
	}
	if got := index(first) + " | " + index(second); got != "a2 b3 | c4 a2 a5" {
		t.Fatalf("numbers = %s", got)
	}
	if got := index(refs.Items()); got != "pre1 a2 b3 c4 a5" || refs.Len() != 5 {
		t.Fatalf("items = %s", got)
	}

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() { refs.Add([]eventbus.Reference{ref(fmt.Sprint("x", i), "X")}) })
	}
	wg.Wait()
	for i, r := range refs.Items() {
		if r.Index != i+1 {
			t.Fatalf("item %d has number %d", i, r.Index)
		}
	}
}
