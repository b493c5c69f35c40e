package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"slices"

	"github.com/chatpipe/chatpipe/internal/registry"
)

// Factory builds a plugin from its config section.
type Factory func(cfg PluginConfig) (Plugin, error)

// PluginConfig is a plugin's YAML section for one chat mode: the global
// `plugins.<name>` section with the mode's overrides laid over it.
type PluginConfig struct {
	Name string         // the plugin's registered name
	Mode string         // the chat mode the plugin is built for
	Key  string         // the config key, for error messages
	Raw  map[string]any // the merged section
	// Chain lists the plugin names of the mode, in order, so a plugin can
	// check where it sits (response_cache must come after load_history).
	Chain []string
	// Fingerprint is a digest of everything in the configuration the
	// mode's answers depend on: its plugin list, each plugin's merged
	// section, and what Build's caller adds (the model definitions). Equal
	// fingerprints mean equally configured chains; caches key on it.
	Fingerprint string
	// Sections are the global plugin sections (config.yaml's plugins), for
	// a plugin that builds a sub-chain of other plugins with BuildStages
	// (agent_loop's knowledge_search tool runs search → rerank → merge).
	// Read only.
	Sections map[string]map[string]any
}

// Decode fills into (a pointer to the plugin's config struct, with
// `mapstructure` tags and defaults already set) from the section. Unknown
// keys are an error that names them, so typos never pass silently.
func (c PluginConfig) Decode(into any) error { return DecodeSection(c.Key, c.Raw, into) }

// factories build the plugins, by the name a mode's list in config.yaml uses.
var factories = registry.New[Factory]("plugin")

// Register makes a plugin available under name; call it from an init
// function. Registering a name twice panics, as it is a programming error.
func Register(name string, f Factory) { factories.Register(name, f) }

// Registered lists the registered plugin names, sorted.
func Registered() []string { return factories.Names() }

// NewPlugin builds the plugin registered under cfg.Name.
func NewPlugin(cfg PluginConfig) (Plugin, error) {
	f, err := factories.Get(cfg.Name)
	if err != nil {
		return nil, &KeyError{Key: cfg.Key, Err: err}
	}
	p, err := f(cfg)
	if err != nil {
		return nil, WithKey(cfg.Key, err)
	}
	return p, nil
}

// ChainEntry is one element of a mode's plugin list: a plugin name and the
// settings this mode overrides.
type ChainEntry struct {
	Name      string
	Overrides map[string]any
}

// Build constructs the EventManager of one mode from its plugin list and
// the global plugin sections. Errors name the config key at fault. extra is
// further configuration the answers depend on that the plugin sections do
// not hold (the app passes the model definitions); it only feeds
// PluginConfig.Fingerprint.
func Build(mode string, entries []ChainEntry, sections map[string]map[string]any, extra ...string) (*EventManager, error) {
	return build(mode, entries, sections, true, extra)
}

// BuildStages builds a sub-chain the way Build builds a mode's chain, but
// one that need not produce an answer: no plugin has to handle the
// generate stage. A plugin or tool runs it on a ChatManage of its own to
// reuse the configured stages (agent_loop's knowledge_search tool runs
// search → rerank → merge through it) instead of reimplementing them.
func BuildStages(mode string, entries []ChainEntry, sections map[string]map[string]any) (*EventManager, error) {
	return build(mode, entries, sections, false, nil)
}

func build(mode string, entries []ChainEntry, sections map[string]map[string]any, answers bool,
	extra []string) (*EventManager, error) {
	if len(entries) == 0 {
		return nil, fmt.Errorf("pipelines.%s: empty plugin list", mode)
	}
	names := make([]string, 0, len(entries))
	merged := make([]map[string]any, 0, len(entries))
	fp := sha256.New()
	for i, e := range entries {
		if slices.Contains(names, e.Name) {
			return nil, fmt.Errorf("pipelines.%s[%d]: plugin %q listed twice", mode, i, e.Name)
		}
		names = append(names, e.Name)
		raw := map[string]any{}
		for k, v := range sections[e.Name] {
			raw[k] = v
		}
		for k, v := range e.Overrides {
			raw[k] = v
		}
		merged = append(merged, raw)
		writeFingerprint(fp, e.Name, raw)
	}
	for _, x := range extra {
		writeFingerprint(fp, x)
	}
	fingerprint := hex.EncodeToString(fp.Sum(nil))[:32]
	plugins := make([]Plugin, 0, len(entries))
	for i, e := range entries {
		key := fmt.Sprintf("pipelines.%s[%d]", mode, i)
		if _, ok := factories.Lookup(e.Name); !ok { // the list names it: say where in the list
			return nil, &KeyError{Key: key, Err: factories.Unknown(e.Name)}
		}
		if len(e.Overrides) == 0 {
			key = "plugins." + e.Name
		}
		p, err := NewPlugin(PluginConfig{Name: e.Name, Mode: mode, Key: key, Raw: merged[i],
			Chain: slices.Clone(names), Fingerprint: fingerprint, Sections: sections})
		if err != nil {
			return nil, err
		}
		plugins = append(plugins, p)
	}
	if !answers {
		return newChain(mode, plugins), nil
	}
	m, err := NewEventManager(mode, plugins)
	if err != nil {
		return nil, fmt.Errorf("pipelines.%s: %w", mode, err)
	}
	return m, nil
}

// writeFingerprint adds values to a fingerprint in a canonical form: JSON,
// whose maps are written with sorted keys, or fmt's %#v (also sorted) for
// what JSON cannot encode. Each value ends with a newline, so the parts
// cannot run into one another.
func writeFingerprint(h hash.Hash, values ...any) {
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			b = fmt.Appendf(nil, "%#v", v)
		}
		h.Write(append(b, '\n'))
	}
}
