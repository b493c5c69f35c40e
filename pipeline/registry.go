package pipeline

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/go-viper/mapstructure/v2"
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
}

// Decode fills into (a pointer to the plugin's config struct, with
// `mapstructure` tags and defaults already set) from the section. Unknown
// keys are an error that names them, so typos never pass silently.
func (c PluginConfig) Decode(into any) error {
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           into,
		ErrorUnused:      true,
		WeaklyTypedInput: true,
		DecodeHook:       mapstructure.StringToTimeDurationHookFunc(),
	})
	if err != nil {
		return err
	}
	if err := dec.Decode(c.Raw); err != nil {
		return fmt.Errorf("%s: %w", c.Key, err)
	}
	return nil
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register makes a plugin available under name; call it from an init
// function. Registering a name twice panics, as it is a programming error.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("pipeline: plugin registered twice: " + name)
	}
	registry[name] = f
}

// Registered lists the registered plugin names, sorted.
func Registered() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewPlugin builds the plugin registered under cfg.Name.
func NewPlugin(cfg PluginConfig) (Plugin, error) {
	registryMu.RLock()
	f, ok := registry[cfg.Name]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%s: unknown plugin %q (registered: %v)", cfg.Key, cfg.Name, Registered())
	}
	p, err := f(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Key, err)
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
// the global plugin sections. Errors name the config key at fault.
func Build(mode string, entries []ChainEntry, sections map[string]map[string]any) (*EventManager, error) {
	if len(entries) == 0 {
		return nil, fmt.Errorf("pipelines.%s: empty plugin list", mode)
	}
	plugins := make([]Plugin, 0, len(entries))
	var seen []string
	for i, e := range entries {
		key := fmt.Sprintf("pipelines.%s[%d]", mode, i)
		if slices.Contains(seen, e.Name) {
			return nil, fmt.Errorf("%s: plugin %q listed twice", key, e.Name)
		}
		seen = append(seen, e.Name)
		raw := map[string]any{}
		for k, v := range sections[e.Name] {
			raw[k] = v
		}
		for k, v := range e.Overrides {
			raw[k] = v
		}
		if len(e.Overrides) == 0 {
			key = "plugins." + e.Name
		}
		p, err := NewPlugin(PluginConfig{Name: e.Name, Mode: mode, Key: key, Raw: raw})
		if err != nil {
			return nil, err
		}
		plugins = append(plugins, p)
	}
	m, err := NewEventManager(mode, plugins)
	if err != nil {
		return nil, fmt.Errorf("pipelines.%s: %w", mode, err)
	}
	return m, nil
}
