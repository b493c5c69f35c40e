package config

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/viper"
)

// EnvPrefix starts every environment variable that overrides a config key.
//
// The rules, in full:
//   - A key becomes CHATPIPE_ + the key in upper case with "." and "-"
//     replaced by "_": stream.heartbeat ← CHATPIPE_STREAM_HEARTBEAT.
//     An empty variable counts as unset.
//   - Every key of the built-in defaults and of the file can be overridden,
//     including keys the file leaves out (api_key is never in the file).
//   - models: every field of every model in the file (or the built-in
//     `default` model) can be set, e.g. CHATPIPE_MODELS_DEFAULT_API_KEY.
//     A variable CHATPIPE_MODELS_<NAME>_PROVIDER whose <NAME> (upper case
//     letters, digits, "_") is not the variable form of an existing model
//     adds a model named lower(<NAME>), whose other fields come from
//     CHATPIPE_MODELS_<NAME>_<FIELD>. The _PROVIDER suffix makes this
//     unambiguous: <NAME> is everything between MODELS_ and _PROVIDER, and
//     no model field name is the tail of another.
//   - plugins: keys present in the file or the defaults can be overridden;
//     the value is converted to the type the key has there (a number stays
//     a number, true/false a boolean, a list takes comma-separated items).
//   - pipelines: CHATPIPE_PIPELINES_<MODE>="load_history,chat_completion_stream"
//     replaces an existing mode's list (plugin names only, no overrides).
const EnvPrefix = "CHATPIPE"

var envKeyReplacer = strings.NewReplacer(".", "_", "-", "_")

// envName is the environment variable that overrides key.
func envName(key string) string {
	return envKeyReplacer.Replace(strings.ToUpper(EnvPrefix + "_" + key))
}

// modelFields are the keys of a models.<name> entry, from the Model struct.
var modelFields = func() []string {
	t := reflect.TypeFor[Model]()
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if tag := mapstructureTag(t.Field(i)); tag != "" {
			out = append(out, tag)
		}
	}
	return out
}()

// bindModelEnv binds every Model field of every known model, and of every
// model defined only by a CHATPIPE_MODELS_<NAME>_PROVIDER variable, so that
// variables reach Unmarshal even for fields nobody wrote down.
func bindModelEnv(v *viper.Viper) {
	names := map[string]bool{}
	for _, key := range v.AllKeys() {
		if rest, ok := strings.CutPrefix(key, "models."); ok {
			if name, _, ok := strings.Cut(rest, "."); ok {
				names[name] = true
			}
		}
	}
	for _, name := range envOnlyModels(names) {
		names[name] = true
	}
	for name := range names {
		for _, field := range modelFields {
			_ = v.BindEnv("models." + name + "." + field) // only fails with no key
		}
	}
}

// envOnlyModels returns the model names that CHATPIPE_MODELS_<NAME>_PROVIDER
// variables define and known does not already hold, sorted.
func envOnlyModels(known map[string]bool) []string {
	prefix, suffix := EnvPrefix+"_MODELS_", "_PROVIDER"
	taken := map[string]bool{}
	for name := range known {
		taken[envKeyReplacer.Replace(strings.ToUpper(name))] = true
	}
	var out []string
	for _, kv := range os.Environ() {
		key, val, _ := strings.Cut(kv, "=")
		if val == "" || !strings.HasPrefix(key, prefix) || !strings.HasSuffix(key, suffix) {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(key, prefix), suffix)
		if name == "" || !isEnvName(name) || taken[name] {
			continue
		}
		taken[name] = true
		out = append(out, strings.ToLower(name))
	}
	sort.Strings(out)
	return out
}

func isEnvName(s string) bool {
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return s[0] != '_' && s[len(s)-1] != '_'
}

// applyPluginEnv sets each plugins.* key that has a variable to the
// variable's value converted to the type the key has in the file or the
// defaults. Plugin sections are free-form maps, so without this a number
// from the environment would reach the plugin as a string.
func applyPluginEnv(v *viper.Viper, file, defaults map[string]any) error {
	for _, key := range v.AllKeys() {
		if !strings.HasPrefix(key, "plugins.") {
			continue
		}
		name := envName(key)
		raw := os.Getenv(name)
		if raw == "" {
			continue
		}
		like, ok := lookupPath(file, key)
		if !ok {
			like, _ = lookupPath(defaults, key)
		}
		val, err := convertLike(raw, like)
		if err != nil {
			return &KeyError{Key: key, Err: fmt.Errorf("%s: %w", name, err)}
		}
		v.Set(key, val)
	}
	return nil
}

// convertLike parses s as the type of like.
func convertLike(s string, like any) (any, error) {
	switch like.(type) {
	case bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("want true or false, got %q", s)
		}
		return b, nil
	case int, int64, uint64:
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("want an integer, got %q", s)
		}
		return n, nil
	case float64:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("want a number, got %q", s)
		}
		return f, nil
	case []any:
		list, _ := stringToList(reflect.TypeFor[string](), reflect.TypeFor[[]any](), s)
		return list, nil
	default:
		return s, nil
	}
}

// mapstructureTag is a struct field's config key, "" when it has none.
func mapstructureTag(f reflect.StructField) string {
	tag, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
	if tag == "-" {
		return ""
	}
	return tag
}

// EnvName is the environment variable that overrides key ("plugins.rerank.top_k"
// ← CHATPIPE_PLUGINS_RERANK_TOP_K); a list index ("pipelines.rag[4]") names
// the list's variable.
func EnvName(key string) string {
	if i := strings.IndexByte(key, '['); i >= 0 {
		key = key[:i]
	}
	return envName(key)
}
