package config

import (
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/viper"
)

// AuthKeysEnv holds API keys as comma-separated tenant:key pairs; when
// set it replaces auth.keys of the file.
const AuthKeysEnv = EnvPrefix + "_AUTH_KEYS"

// SharedTenant is the reserved tenant of the shared documents (the
// knowledge package's SharedTenant); no key may belong to it.
const SharedTenant = "_shared"

// minKeyLength bounds how short an API key may be: a short key is a
// guessable key.
const minKeyLength = 16

// applyAuthKeysEnv turns CHATPIPE_AUTH_KEYS into auth.keys entries.
func applyAuthKeysEnv(v *viper.Viper) error {
	raw, ok := os.LookupEnv(AuthKeysEnv)
	if !ok || strings.TrimSpace(raw) == "" {
		return nil
	}
	var keys []any
	for i, pair := range strings.Split(raw, ",") {
		tenant, key, found := strings.Cut(strings.TrimSpace(pair), ":")
		if !found || strings.TrimSpace(tenant) == "" || key == "" {
			return keyErr("auth.keys", "%s: entry %d is not tenant:key (from %s)", AuthKeysEnv, i+1, AuthKeysEnv)
		}
		keys = append(keys, map[string]any{"tenant": strings.TrimSpace(tenant), "key": key})
	}
	v.Set("auth.keys", keys)
	return nil
}

// validateAuth checks the keys and refuses an open server on an address
// other users can reach.
func (c *Config) validateAuth(add func(key, format string, args ...any)) {
	seen := map[string]bool{}
	for i, k := range c.Auth.Keys {
		key := fmt.Sprintf("auth.keys[%d]", i)
		if strings.TrimSpace(k.Tenant) == "" {
			add(key+".tenant", "every key needs the tenant it belongs to")
		}
		if k.Tenant == SharedTenant {
			add(key+".tenant", "%q is reserved for the shared documents; give the key manage_shared: true to let it manage them", SharedTenant)
		}
		switch {
		case k.Key != "" && k.KeySHA256 != "":
			add(key, "set key or key_sha256, not both")
		case k.Key != "":
			if len(k.Key) < minKeyLength {
				add(key+".key", "is shorter than %d characters; use a long random key (openssl rand -hex 32)", minKeyLength)
			}
		case k.KeySHA256 != "":
			if b, err := hex.DecodeString(k.KeySHA256); err != nil || len(b) != 32 {
				add(key+".key_sha256", "must be 64 hexadecimal characters (sha256sum of the key)")
			}
		default:
			add(key, "needs key or key_sha256")
		}
		id := k.Key + "|" + strings.ToLower(k.KeySHA256)
		if seen[id] {
			add(key, "the same key is listed twice")
		}
		seen[id] = true
	}
	if len(c.Auth.Keys) == 0 && !c.Auth.AllowOpen && !isLoopback(c.Server.Addr) {
		add("auth.keys", "no API keys are configured, and server.addr %q can be reached from other machines; "+
			"add keys under auth.keys (or set %s=tenant:key), or set auth.allow_open: true to serve without authentication",
			c.Server.Addr, AuthKeysEnv)
	}
}

// isLoopback reports whether addr listens on the local machine only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
