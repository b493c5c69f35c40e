package config

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
)

// KeyError is a configuration error about one key, written as the key's
// dotted path: "server.addr", "models.gpt.timeout", "pipelines.chat[1]".
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns the cause, so errors.Is sees sentinels such as ErrUnknownMode.
func (e *KeyError) Unwrap() error { return e.Err }

func keyErr(key, format string, args ...any) *KeyError {
	return &KeyError{Key: key, Err: fmt.Errorf(format, args...)}
}

// checkKeys walks the parsed file against the Config struct and reports
// every key the struct does not have, with the keys it would accept. Only
// the free-form parts (pipelines lists, plugin sections) are not checked.
// It runs before decoding so that the messages use the file's spelling and
// say what is allowed, which mapstructure's "has invalid keys" does not.
func checkKeys(raw map[string]any) error {
	var errs []error
	checkStruct(raw, reflect.TypeFor[Config](), "", &errs)
	return errors.Join(errs...)
}

func checkStruct(m map[string]any, t reflect.Type, prefix string, errs *[]error) {
	fields := map[string]reflect.StructField{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if tag := mapstructureTag(f); tag != "" {
			fields[tag] = f
			names = append(names, tag)
		}
	}
	sort.Strings(names)
	for _, key := range sortedKeys(m) {
		f, ok := fields[strings.ToLower(key)]
		if !ok {
			where := "top-level keys"
			if prefix != "" {
				where = strings.TrimSuffix(prefix, ".") + " takes"
			}
			*errs = append(*errs, keyErr(prefix+key, "unknown key (%s: %s)", where, strings.Join(names, ", ")))
			continue
		}
		checkValue(m[key], f.Type, prefix+key, errs)
	}
}

var timeType = reflect.TypeFor[time.Time]()

func checkValue(val any, t reflect.Type, key string, errs *[]error) {
	if val == nil {
		return // absent: the default applies
	}
	switch {
	case t.Kind() == reflect.Struct && t != timeType:
		m, ok := val.(map[string]any)
		if !ok {
			*errs = append(*errs, keyErr(key, "want a mapping of keys, got %s", describe(key, val)))
			return
		}
		checkStruct(m, t, key+".", errs)
	case t.Kind() == reflect.Map:
		m, ok := val.(map[string]any)
		if !ok {
			*errs = append(*errs, keyErr(key, "want a mapping of names, got %s", describe(key, val)))
			return
		}
		for _, name := range sortedKeys(m) {
			sub := key + "." + name
			switch {
			case strings.TrimSpace(name) == "":
				*errs = append(*errs, keyErr(key, "an entry has an empty name"))
				continue
			case strings.Contains(name, "."):
				// viper splits keys on ".", so such a name would be torn apart.
				*errs = append(*errs, keyErr(key, "name %q may not contain \".\"", name))
				continue
			}
			elem := t.Elem()
			switch elem.Kind() {
			case reflect.Struct: // models.<name>
				entry, ok := m[name].(map[string]any)
				if !ok || len(entry) == 0 {
					*errs = append(*errs, keyErr(sub, "want a mapping of keys, got %s", describe(sub, m[name])))
					continue
				}
				checkStruct(entry, elem, sub+".", errs)
			case reflect.Map: // plugins.<name>: free-form settings
				if _, ok := m[name].(map[string]any); !ok && m[name] != nil {
					*errs = append(*errs, keyErr(sub, "want a mapping of settings, got %s", describe(sub, m[name])))
				}
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
