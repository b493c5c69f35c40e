package config

import (
	"net/url"
	"strings"
)

// Secrets lists every secret value of the configuration, for redaction
// from what users and logs see: every model's and the embedder's api_key,
// passwords and query values of their base URLs, the Redis password, the
// PostgreSQL password (URL or key=value DSN), the API keys of auth.keys,
// and every plugin setting — in plugins or in a mode's overrides — whose
// name says it is secret (remote_api_key, token, password, …) or that is
// the value of a header (a "headers" map: Authorization, X-Api-Key, …).
func (c *Config) Secrets() []string {
	if c == nil {
		return nil
	}
	var out []string
	add := func(values ...string) {
		for _, v := range values {
			v = strings.TrimSpace(v)
			if v == "" {
				continue
			}
			out = append(out, v)
			// "Bearer <token>": the token alone is the secret too.
			if scheme, token, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "Bearer") {
				out = append(out, strings.TrimSpace(token))
			}
		}
	}
	for _, m := range c.Models {
		add(m.APIKey)
		add(urlSecrets(m.BaseURL)...)
	}
	add(c.Knowledge.Embedding.APIKey)
	add(urlSecrets(c.Knowledge.Embedding.BaseURL)...)
	add(c.Redis.Password)
	for _, v := range c.Telemetry.Traces.Headers {
		add(v)
	}
	add(dsnSecrets(c.Postgres.DSN)...)
	for _, k := range c.Auth.Keys {
		add(k.Key)
	}
	for _, section := range c.Plugins {
		add(settingSecrets("", section)...)
	}
	for _, list := range c.Pipelines {
		add(settingSecrets("", list)...)
	}
	return out
}

// settingSecrets walks a plugin's settings for secret values.
func settingSecrets(name string, v any) []string {
	var out []string
	switch t := v.(type) {
	case map[string]any:
		for k, item := range t {
			if strings.EqualFold(name, "headers") {
				if s, ok := item.(string); ok {
					out = append(out, s)
					continue
				}
			}
			out = append(out, settingSecrets(k, item)...)
		}
	case []any:
		for _, item := range t {
			out = append(out, settingSecrets(name, item)...)
		}
	case string:
		if isSecretName(name) || strings.EqualFold(name, "authorization") {
			out = append(out, t)
		}
		out = append(out, urlSecrets(t)...)
	}
	return out
}

// urlSecrets returns the password and the query values of a URL
// (https://u:p@host/v1?key=…); none for text that is not a URL.
func urlSecrets(s string) []string {
	if !strings.Contains(s, "://") {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok {
		out = append(out, p)
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	return out
}

// dsnSecrets returns the password of a PostgreSQL DSN, URL or key=value.
func dsnSecrets(dsn string) []string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return nil
		}
		var out []string
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
		if p := u.Query().Get("password"); p != "" {
			out = append(out, p)
		}
		return out
	}
	for _, field := range strings.Fields(dsn) {
		if k, v, ok := strings.Cut(field, "="); ok && k == "password" {
			return []string{strings.Trim(v, "'")}
		}
	}
	return nil
}
