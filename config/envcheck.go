package config

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/spf13/viper"

	"github.com/chatpipe/chatpipe/internal/suggest"
)

// envTestPrefix starts variables that configure chatpipe's own tests
// (CHATPIPE_TEST_REDIS_ADDR, …), not the server: the check leaves them be.
const envTestPrefix = EnvPrefix + "_TEST_"

// EnvError reports CHATPIPE_* variables that set no key: a misspelled
// variable would otherwise be ignored without a word, while a misspelled
// YAML key is refused.
type EnvError struct{ Problems []string }

func (e *EnvError) Error() string {
	if len(e.Problems) == 1 {
		return "config: environment: " + e.Problems[0]
	}
	return "config: environment: " + fmt.Sprint(len(e.Problems)) + " problems:\n  " + strings.Join(e.Problems, "\n  ")
}

// checkEnv refuses every set CHATPIPE_* variable that no key reads, naming
// the closest variable that would; a variable naming a whole section
// (CHATPIPE_STORAGE) says which section it would overwrite and which
// variables set its keys. v holds the defaults, the file and the model
// bindings: the keys that exist.
func checkEnv(v *viper.Viper) error {
	valid, sections := envNames(v)
	var problems []string
	for _, kv := range os.Environ() {
		name, val, _ := strings.Cut(kv, "=")
		if val == "" || !strings.HasPrefix(name, EnvPrefix+"_") || strings.HasPrefix(name, envTestPrefix) || valid[name] {
			continue
		}
		if section, ok := sections[name]; ok {
			problems = append(problems, fmt.Sprintf("%s names the section %q, which it would overwrite as a whole; "+
				"set one key at a time, e.g. %s", name, section, exampleIn(valid, name)))
			continue
		}
		msg := name + ": no config key reads this variable"
		if near := closest(name, valid); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		problems = append(problems, msg)
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	return &EnvError{Problems: problems}
}

// envNames returns the variables that set a key, and those that name a
// section (mapped to the section's key).
func envNames(v *viper.Viper) (valid map[string]bool, sections map[string]string) {
	valid = map[string]bool{AuthKeysEnv: true}
	sections = map[string]string{}
	keys := v.AllKeys()
	keys = append(keys, structKeys(reflect.TypeFor[Config](), "")...)
	for _, key := range keys {
		valid[envName(key)] = true
		for i := strings.IndexByte(key, '.'); i >= 0; {
			sections[envName(key[:i])] = key[:i]
			j := strings.IndexByte(key[i+1:], '.')
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
	for name := range valid {
		delete(sections, name) // a key that is also a prefix (none today) wins
	}
	return valid, sections
}

// structKeys lists the leaf keys of the fixed parts of Config (maps of
// models and plugins are open-ended and come from viper's keys instead).
func structKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := mapstructureTag(f)
		if tag == "" {
			continue
		}
		if f.Type.Kind() == reflect.Struct && f.Type != timeType {
			out = append(out, structKeys(f.Type, prefix+tag+".")...)
			continue
		}
		out = append(out, prefix+tag)
	}
	return out
}

// exampleIn returns a valid variable of the section variable name.
func exampleIn(valid map[string]bool, name string) string {
	var in []string
	for v := range valid {
		if strings.HasPrefix(v, name+"_") {
			in = append(in, v)
		}
	}
	sort.Strings(in)
	if len(in) > 3 {
		in = append(in[:3], "…")
	}
	return strings.Join(in, ", ")
}

// closest returns the valid name nearest to name, or "" when none is
// near enough to be a likely typo.
func closest(name string, valid map[string]bool) string {
	names := make([]string, 0, len(valid))
	for v := range valid {
		names = append(names, v)
	}
	return suggest.Closest(name, names)
}
