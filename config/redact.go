package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"time"
)

// redactedValue replaces a secret when a config is printed.
const redactedValue = "[redacted]"

// Redacted returns a copy of c that is safe to log: model and embedding
// api_key values,
// plugin settings whose name says they are secret (api_key, token, secret,
// password, ...) and passwords inside URLs are replaced by "[redacted]".
// An empty secret stays empty, so the log still shows it is unset.
func (c *Config) Redacted() *Config {
	if c == nil {
		return nil
	}
	out := *c
	out.Models = make(map[string]Model, len(c.Models))
	for name, m := range c.Models {
		out.Models[name] = m.redacted()
	}
	out.Knowledge.Embedding.APIKey = mask(c.Knowledge.Embedding.APIKey)
	out.Redis.Password = mask(c.Redis.Password)
	out.Postgres.DSN = redactURL(c.Postgres.DSN)
	out.Auth.Keys = make([]AuthKey, len(c.Auth.Keys))
	for i, k := range c.Auth.Keys {
		out.Auth.Keys[i] = AuthKey{Tenant: k.Tenant, Key: mask(k.Key), KeySHA256: k.KeySHA256}
	}
	out.Plugins = make(map[string]map[string]any, len(c.Plugins))
	for name, section := range c.Plugins {
		out.Plugins[name] = redactMap(section)
	}
	out.Pipelines = make(map[string][]any, len(c.Pipelines))
	for mode, list := range c.Pipelines {
		out.Pipelines[mode] = redactValue("", list).([]any)
	}
	return &out
}

// String renders the redacted configuration as one line of JSON with the
// config.yaml key names, for logs. zap.Any uses it too.
func (c *Config) String() string {
	if c == nil {
		return "<nil>"
	}
	return toJSON(*c.Redacted())
}

// String renders the model with its api_key redacted, so that printing a
// Model or a Config's Models with fmt or zap never leaks the key.
func (m Model) String() string { return toJSON(m.redacted()) }

// GoString keeps %#v from bypassing String and printing the key.
func (m Model) GoString() string { return "config.Model" + m.String() }

func (m Model) redacted() Model {
	m.APIKey = mask(m.APIKey)
	m.BaseURL = redactURL(m.BaseURL)
	return m
}

func mask(secret string) string {
	if secret == "" {
		return ""
	}
	return redactedValue
}

// secretWords are the last word of a setting name that holds a secret:
// api_key, access_token, client_secret, db_password.
var secretWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true,
	"password": true, "passwd": true, "credential": true, "credentials": true,
}

func isSecretName(name string) bool {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	return len(words) > 0 && secretWords[words[len(words)-1]]
}

func redactMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = redactValue(k, v)
	}
	return out
}

func redactValue(name string, v any) any {
	switch t := v.(type) {
	case map[string]any:
		return redactMap(t)
	case []any:
		out := make([]any, len(t))
		for i, item := range t {
			out[i] = redactValue(name, item)
		}
		return out
	case string:
		if isSecretName(name) {
			return mask(t)
		}
		return redactURL(t)
	default:
		if isSecretName(name) && v != nil {
			return redactedValue
		}
		return v
	}
}

// redactURL hides the password of a URL such as postgres://u:p@host/db.
func redactURL(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted() // prints the password as "xxxxx"
}

func toJSON(v any) string {
	b, err := json.Marshal(plain(reflect.ValueOf(v)))
	if err != nil {
		return fmt.Sprintf("<unprintable config: %v>", err)
	}
	return string(b)
}

// plain converts a config value to maps keyed by config key names, with
// durations written as "15s".
func plain(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return plain(v.Elem())
	case reflect.Struct:
		out := map[string]any{}
		for i := range v.NumField() {
			if tag := mapstructureTag(v.Type().Field(i)); tag != "" {
				out[tag] = plain(v.Field(i))
			}
		}
		return out
	case reflect.Map:
		out := make(map[string]any, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			out[fmt.Sprint(iter.Key().Interface())] = plain(iter.Value())
		}
		return out
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = plain(v.Index(i))
		}
		return out
	default:
		return v.Interface()
	}
}
