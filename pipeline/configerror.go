package pipeline

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"

	"github.com/chatpipe/chatpipe/internal/suggest"
)

// KeyError is a plugin or tool configuration error about one key, written
// as the operator wrote it ("plugins.load_history.max_roundz",
// "pipelines.rag[4]"). The composition root adds where the key came from
// (the file, or a CHATPIPE_* variable).
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *KeyError) Unwrap() error { return e.Err }

// DecodeSection decodes a YAML section (raw, found at key) into a config
// struct with `mapstructure` tags, as plugins and tools do: durations from
// strings, weak typing. Each unknown key and each bad value is a KeyError
// naming the key, with the keys the section takes (and the closest one).
func DecodeSection(key string, raw map[string]any, into any) error {
	accepted := sectionKeys(reflect.TypeOf(into))
	var errs []error
	for _, k := range sortedKeys(raw) {
		if accepted == nil || contains(accepted, strings.ToLower(k)) {
			continue
		}
		msg := fmt.Sprintf("unknown key (%s takes: %s", key, strings.Join(accepted, ", "))
		if near := suggest.Closest(strings.ToLower(k), accepted); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		errs = append(errs, &KeyError{Key: key + "." + k, Err: errors.New(msg + ")")})
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           into,
		ErrorUnused:      true,
		WeaklyTypedInput: true,
		DecodeHook:       mapstructure.StringToTimeDurationHookFunc(),
	})
	if err != nil {
		return err
	}
	if err := dec.Decode(raw); err != nil {
		return decodeErrors(key, err)
	}
	return nil
}

// decodeErrors rewrites mapstructure's errors as KeyErrors on the full key.
func decodeErrors(key string, err error) error {
	var leaves []error
	var walk func(error)
	walk = func(e error) {
		if multi, ok := e.(interface{ Unwrap() []error }); ok {
			for _, sub := range multi.Unwrap() {
				walk(sub)
			}
			return
		}
		var de *mapstructure.DecodeError
		if errors.As(e, &de) {
			inner := de.Unwrap()
			var nested *mapstructure.DecodeError
			if errors.As(inner, &nested) {
				walk(inner)
				return
			}
			leaves = append(leaves, &KeyError{Key: key + "." + de.Name(), Err: valueError(inner)})
			return
		}
		leaves = append(leaves, &KeyError{Key: key, Err: e})
	}
	walk(err)
	return errors.Join(leaves...)
}

// valueError says what was wanted in config.yaml words, not Go types.
func valueError(err error) error {
	var pe *mapstructure.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("want %s, got %q", suggest.KindWord(pe.Expected.Type()), fmt.Sprint(pe.Value))
	}
	var ue *mapstructure.UnconvertibleTypeError
	if errors.As(err, &ue) {
		return fmt.Errorf("want %s, got %v", suggest.KindWord(ue.Expected.Type()), ue.Value)
	}
	return err
}

// sectionKeys lists the keys a config struct takes (nil when into is not
// a pointer to a struct: then mapstructure alone checks).
func sectionKeys(t reflect.Type) []string {
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	t = t.Elem()
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if tag == "-" {
			continue
		}
		if tag == "" {
			tag = strings.ToLower(f.Name) // mapstructure matches the field name, case-insensitively
		}
		out = append(out, tag)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WithKey prefixes err with key unless it already names a key under it
// (plugins and tools return errors that do), so no prefix is repeated.
func WithKey(key string, err error) error {
	var ke *KeyError
	if errors.As(err, &ke) {
		return err
	}
	if own, rest, ok := strings.Cut(err.Error(), ": "); ok && strings.HasPrefix(own, key) && !strings.Contains(own, " ") {
		// "plugins.rerank.top_k: must be at least 1", written by the plugin
		return &KeyError{Key: own, Err: trimmed{msg: rest, err: err}}
	}
	return &KeyError{Key: key, Err: err}
}

// trimmed is an error whose text lost its key prefix (now the KeyError's).
type trimmed struct {
	msg string
	err error
}

func (t trimmed) Error() string { return t.msg }
func (t trimmed) Unwrap() error { return t.err }
