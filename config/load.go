package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/chatpipe/chatpipe/internal/suggest"
)

// DefaultPath is the config file read when no path is given. Unlike an
// explicit path, it may be missing: chatpipe then runs on built-in defaults.
const DefaultPath = "config.yaml"

// ErrEmptyFile reports a config file with nothing in it. Editors truncate a
// file before writing it, so a hot reload can catch it empty for a moment;
// such a file is never applied.
var ErrEmptyFile = errors.New("file is empty")

// Load reads the config file at path (DefaultPath when empty), lays the
// CHATPIPE_* environment over it and the built-in defaults under it, and
// decodes the result. Unknown keys are an error naming them. When path is
// DefaultPath and the file does not exist, Load returns the built-in
// defaults with File empty so the caller can say so; any other missing
// path is an error. Load does not call Validate.
//
// Environment variables are CHATPIPE_ plus the key in upper case with "."
// and "-" turned into "_": server.addr ← CHATPIPE_SERVER_ADDR,
// models.default.api_key ← CHATPIPE_MODELS_DEFAULT_API_KEY. EnvPrefix
// documents the rules for models, plugins and pipelines.
//
// Sections keyed by name merge differently: a file's models and pipelines
// replace the built-in ones as a whole; plugins merge key by key.
func Load(path string) (*Config, error) {
	optional := path == "" || filepath.Clean(path) == DefaultPath
	if path == "" {
		path = DefaultPath
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			cfg, err := build(nil, true)
			if err != nil {
				if envErr := (*EnvError)(nil); errors.As(err, &envErr) {
					return nil, err
				}
				return nil, inFile("environment", err) // the defaults alone always decode
			}
			return cfg, nil
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	return parse(data, path)
}

// Default returns the built-in configuration, ignoring config files and the
// environment. Tests of other packages start from it.
func Default() *Config {
	cfg, err := build(nil, false)
	if err != nil {
		panic("config: built-in defaults do not decode: " + err.Error())
	}
	return cfg
}

// parse loads the contents of the config file named file.
func parse(data []byte, file string) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("config: %s: %w", file, ErrEmptyFile)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config: %s: %w", file, err)
	}
	var raw map[string]any
	switch d := doc.(type) {
	case nil: // only comments: every key takes its default
		raw = map[string]any{}
	case map[string]any:
		raw = d
	default:
		return nil, fmt.Errorf("config: %s: want a mapping of keys at the top level, got %s", file, describe("", doc))
	}
	if err := checkKeys(raw); err != nil {
		return nil, inFile(file, err)
	}
	cfg, err := build(raw, true)
	if err != nil {
		if envErr := (*EnvError)(nil); errors.As(err, &envErr) {
			return nil, err // not the file's fault: say it is the environment
		}
		return nil, inFile(file, err)
	}
	cfg.File = file
	return cfg, nil
}

// build decodes the defaults, the parsed file (nil for none) and, when
// useEnv, the environment into a fresh Config using a fresh viper.
func build(file map[string]any, useEnv bool) (*Config, error) {
	defaults := builtinDefaults()
	v := viper.New()
	if useEnv {
		v.SetEnvPrefix(EnvPrefix)
		v.SetEnvKeyReplacer(envKeyReplacer)
		v.AutomaticEnv()
	}
	setDefaults(v, defaults, file)
	if file != nil {
		if err := v.MergeConfigMap(file); err != nil {
			return nil, err
		}
	}
	if useEnv {
		bindModelEnv(v)
		if err := checkEnv(v); err != nil {
			return nil, err
		}
		if err := applyPluginEnv(v, file, defaults); err != nil {
			return nil, err
		}
		if err := applyAuthKeysEnv(v); err != nil {
			return nil, err
		}
	}
	var cfg Config
	if err := v.UnmarshalExact(&cfg, viper.DecodeHook(decodeHook)); err != nil {
		return nil, decodeError(err, useEnv)
	}
	// Keys are case-insensitive (viper lower-cases them); the mode named in
	// a value must match the lower-cased pipelines keys.
	cfg.DefaultMode = strings.ToLower(strings.TrimSpace(cfg.DefaultMode))
	return &cfg, nil
}

var durationType = reflect.TypeFor[time.Duration]()

// decodeHook replaces viper's default hooks: durations from strings
// ("15s"), lists from comma-separated strings (for environment variables),
// and a refusal of bare numbers for durations, which would otherwise decode
// silently as nanoseconds.
var decodeHook = mapstructure.ComposeDecodeHookFunc(
	durationFromNumber,
	durationFromString,
	stringToList,
)

func durationFromString(from, to reflect.Type, data any) (any, error) {
	if to != durationType || from.Kind() != reflect.String {
		return data, nil
	}
	s := strings.TrimSpace(data.(string))
	if s == "" || s == "0" {
		return time.Duration(0), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, fmt.Errorf("want a duration like \"15s\", \"500ms\" or \"10m\", got %q", data)
	}
	return d, nil
}

func durationFromNumber(from, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch from.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if reflect.ValueOf(data).IsZero() {
			return data, nil
		}
		return nil, fmt.Errorf("want a duration with a unit, like \"%vs\", got the bare number %v", data, data)
	}
	return data, nil
}

func stringToList(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to.Kind() != reflect.Slice {
		return data, nil
	}
	s := strings.TrimSpace(data.(string))
	if s == "" {
		return []any{}, nil
	}
	parts := strings.Split(s, ",")
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = strings.TrimSpace(p)
	}
	return out, nil
}

// mapstructure names a field "models[gpt].timeout"; we say models.gpt.timeout.
var bracketName = regexp.MustCompile(`\[([^\]]*)\]`)

func keyFromDecodeName(name string) string {
	return bracketName.ReplaceAllStringFunc(name, func(m string) string {
		inner := m[1 : len(m)-1]
		if inner != "" && strings.Trim(inner, "0123456789") == "" {
			return m // list index
		}
		return "." + inner
	})
}

// decodeError rewrites mapstructure's errors as KeyErrors, saying which
// environment variable supplied a bad value when one did.
func decodeError(err error, useEnv bool) error {
	var leaves []error
	var walk func(error)
	walk = func(e error) {
		if multi, ok := e.(interface{ Unwrap() []error }); ok {
			for _, sub := range multi.Unwrap() {
				walk(sub)
			}
			return
		}
		de, ok := e.(*mapstructure.DecodeError)
		if !ok {
			if inner := errors.Unwrap(e); inner != nil {
				walk(inner) // drop mapstructure's "decoding failed" preamble
				return
			}
			leaves = append(leaves, e)
			return
		}
		inner := de.Unwrap()
		if _, nested := inner.(*mapstructure.DecodeError); nested || isMulti(inner) {
			walk(inner)
			return
		}
		key := keyFromDecodeName(de.Name())
		msg := decodeMessage(key, inner)
		if useEnv {
			if name := envName(key); os.Getenv(name) != "" {
				msg += " (from " + name + ")"
			}
		}
		leaves = append(leaves, &KeyError{Key: key, Err: errors.New(msg)})
	}
	walk(err)
	if len(leaves) == 0 {
		return err
	}
	sort.SliceStable(leaves, func(i, j int) bool { return leaves[i].Error() < leaves[j].Error() })
	return errors.Join(leaves...)
}

// decodeMessage says what was wanted in config.yaml words rather than Go
// type names.
func decodeMessage(key string, err error) string {
	var pe *mapstructure.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("want %s, got %s", suggest.KindWord(pe.Expected.Type()), describe(key, pe.Value))
	}
	var ue *mapstructure.UnconvertibleTypeError
	if errors.As(err, &ue) {
		return fmt.Sprintf("want %s, got %s", suggest.KindWord(ue.Expected.Type()), describe(key, ue.Value))
	}
	return err.Error()
}

// fileError is every problem found in one config file.
type fileError struct {
	file string
	errs []error
}

func inFile(file string, err error) error {
	fe := &fileError{file: file}
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		fe.errs = multi.Unwrap()
	} else {
		fe.errs = []error{err}
	}
	return fe
}

func (e *fileError) Error() string {
	if len(e.errs) == 1 {
		return "config: " + e.file + ": " + e.errs[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "config: %s: %d problems:", e.file, len(e.errs))
	for _, err := range e.errs {
		b.WriteString("\n  " + err.Error())
	}
	return b.String()
}

func (e *fileError) Unwrap() []error { return e.errs }

func isMulti(err error) bool {
	_, ok := err.(interface{ Unwrap() []error })
	return ok
}

// describe names the shape of the value found at key for an error message.
// It never echoes the value of a key whose name says it is a secret (a
// mis-indented api_key line lands in odd places), and shortens long strings.
func describe(key string, v any) string {
	switch t := v.(type) {
	case nil:
		return "nothing"
	case string:
		if isSecretName(key[strings.LastIndex(key, ".")+1:]) {
			return "a string"
		}
		if len(t) > 40 {
			t = t[:40] + "…"
		}
		return fmt.Sprintf("the string %q", t)
	case []any:
		return fmt.Sprintf("a list of %d", len(t))
	case map[string]any:
		return fmt.Sprintf("a mapping of %d keys", len(t))
	case bool:
		return fmt.Sprint(t)
	case int, int64, uint64, float64, float32:
		return fmt.Sprintf("the number %v", t)
	default:
		return fmt.Sprintf("%v", v)
	}
}
