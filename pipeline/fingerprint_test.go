package pipeline

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
)

// configSeen is a plugin handling the generate stage; its factory keeps
// the PluginConfig it was given in seenConfigs.
type configSeen struct{ name string }

func (p configSeen) Name() string        { return p.name }
func (p configSeen) Events() []EventType { return []EventType{StageGenerate} }
func (p configSeen) OnEvent(_ context.Context, _ EventType, _ *ChatManage, next func() *PluginError) *PluginError {
	return next()
}

var seenConfigs []PluginConfig

func init() {
	for _, name := range []string{"fp_a", "fp_b"} {
		Register(name, func(c PluginConfig) (Plugin, error) {
			seenConfigs = append(seenConfigs, c)
			return configSeen{name: c.Name}, nil
		})
	}
}

// buildFingerprint builds a chain and returns the fingerprint and chain
// its plugins were given (all plugins get the same).
func buildFingerprint(t *testing.T, entries []ChainEntry, sections map[string]map[string]any, extra ...string) (string, []string) {
	t.Helper()
	seenConfigs = nil
	if _, err := Build("m", entries, sections, extra...); err != nil {
		t.Fatal(err)
	}
	for _, c := range seenConfigs[1:] {
		if c.Fingerprint != seenConfigs[0].Fingerprint || !slices.Equal(c.Chain, seenConfigs[0].Chain) {
			t.Fatalf("plugins of one chain got different fingerprints or chains: %+v", seenConfigs)
		}
	}
	return seenConfigs[0].Fingerprint, seenConfigs[0].Chain
}

// The fingerprint changes with anything in the configuration that can
// change an answer, and only with that.
func TestFingerprintFollowsTheChainsConfiguration(t *testing.T) {
	entries := []ChainEntry{{Name: "fp_a"}, {Name: "fp_b"}}
	sections := map[string]map[string]any{"fp_a": {"x": 1, "list": []any{"a", "b"}}, "fp_b": {"y": "z"}}
	base, chain := buildFingerprint(t, entries, sections, "models v1")
	if len(base) != 32 || !slices.Equal(chain, []string{"fp_a", "fp_b"}) {
		t.Fatalf("fingerprint %q, chain %v", base, chain)
	}
	same, _ := buildFingerprint(t, entries, map[string]map[string]any{
		"fp_b": {"y": "z"}, "fp_a": {"list": []any{"a", "b"}, "x": 1}, "unused": {"k": 1},
	}, "models v1")
	if same != base {
		t.Error("an equal configuration (other map order, an unused section) changed the fingerprint")
	}
	for name, fp := range map[string]string{
		"section value": first(buildFingerprint(t, entries, map[string]map[string]any{"fp_a": {"x": 2, "list": []any{"a", "b"}}, "fp_b": {"y": "z"}}, "models v1")),
		"list order":    first(buildFingerprint(t, entries, map[string]map[string]any{"fp_a": {"x": 1, "list": []any{"b", "a"}}, "fp_b": {"y": "z"}}, "models v1")),
		"override":      first(buildFingerprint(t, []ChainEntry{{Name: "fp_a", Overrides: map[string]any{"x": 3}}, {Name: "fp_b"}}, sections, "models v1")),
		"plugin order":  first(buildFingerprint(t, []ChainEntry{{Name: "fp_b"}, {Name: "fp_a"}}, sections, "models v1")),
		"extra":         first(buildFingerprint(t, entries, sections, "models v2")),
		"no extra":      first(buildFingerprint(t, entries, sections)),
	} {
		if fp == base {
			t.Errorf("changing the %s kept the fingerprint", name)
		}
	}
}

func first(a string, _ []string) string { return a }

// ctxPlugin handles one stage; with stop set it runs the rest of the chain
// on a context of its own and cancels it when the generator signals.
type ctxPlugin struct {
	name  string
	evt   EventType
	stop  bool
	trace *[]string
}

var errStopRest = errors.New("stop the rest")

func (p ctxPlugin) Name() string        { return p.name }
func (p ctxPlugin) Events() []EventType { return []EventType{p.evt} }
func (p ctxPlugin) OnEvent(ctx context.Context, _ EventType, cm *ChatManage, next func() *PluginError) *PluginError {
	if !p.stop {
		if ctx.Err() != nil {
			*p.trace = append(*p.trace, p.name+" saw "+context.Cause(ctx).Error())
			return Canceled(ctx)
		}
		cm.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, "x"))
		return next()
	}
	rest, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	inner := cm.Emitter
	cm.Emitter = eventbus.EmitterFunc(func(ev eventbus.Event) {
		if ev.Type == eventbus.TypeAnswerDelta {
			cancel(errStopRest)
		}
		inner.Emit(ev)
	})
	defer func() { cm.Emitter = inner }()
	cm.SetNextContext(rest)
	perr := next()
	if ctx.Err() != nil {
		*p.trace = append(*p.trace, "own context cancelled")
	}
	return perr
}

// SetNextContext hands the rest of the chain a context the plugin can
// cancel, without touching the plugin's own.
func TestSetNextContextLetsAPluginStopTheRestOfTheChain(t *testing.T) {
	var trace []string
	m, err := NewEventManager("m", []Plugin{
		ctxPlugin{name: "filter", evt: "filter", stop: true, trace: &trace},
		ctxPlugin{name: "gen", evt: StageGenerate, trace: &trace},
		ctxPlugin{name: "after", evt: "after", trace: &trace},
	})
	if err != nil {
		t.Fatal(err)
	}
	perr := m.Execute(context.Background(), &ChatManage{Emitter: eventbus.EmitterFunc(func(eventbus.Event) {})})
	if perr == nil || perr.Code != CodeCanceled || !errors.Is(perr, errStopRest) {
		t.Fatalf("Execute = %v, want the rest cancelled with errStopRest", perr)
	}
	if slices.Contains(trace, "own context cancelled") {
		t.Fatal("the filter's own context was cancelled")
	}
}
