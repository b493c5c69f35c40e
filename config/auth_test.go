package config

import (
	"strings"
	"testing"
)

func TestAuthKeysFromTheEnvironment(t *testing.T) {
	t.Setenv(AuthKeysEnv, "acme:0123456789abcdef0123, beta:fedcba9876543210fedc")
	c, err := Load(writeConfig(t, "server:\n  addr: 0.0.0.0:8080\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if len(c.Auth.Keys) != 2 || c.Auth.Keys[0].Tenant != "acme" || c.Auth.Keys[1].Key != "fedcba9876543210fedc" {
		t.Fatalf("keys = %+v", c.Auth.Keys)
	}
	if s := c.String(); strings.Contains(s, "0123456789abcdef0123") {
		t.Fatalf("a key is printed: %s", s)
	}
}

func TestAuthValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		key  string // "" = valid
	}{
		{"open on loopback", func(c *Config) {}, ""},
		{"open on every interface", func(c *Config) { c.Server.Addr = ":8080" }, "auth.keys"},
		{"open on purpose", func(c *Config) { c.Server.Addr = "0.0.0.0:8080"; c.Auth.AllowOpen = true }, ""},
		{"keyed on every interface", func(c *Config) {
			c.Server.Addr = "0.0.0.0:8080"
			c.Auth.Keys = []AuthKey{{Tenant: "a", KeySHA256: strings.Repeat("ab", 32)}}
		}, ""},
		{"no tenant", func(c *Config) { c.Auth.Keys = []AuthKey{{Key: "0123456789abcdef0123"}} }, "auth.keys[0].tenant"},
		{"short key", func(c *Config) { c.Auth.Keys = []AuthKey{{Tenant: "a", Key: "short"}} }, "auth.keys[0].key"},
		{"bad hash", func(c *Config) { c.Auth.Keys = []AuthKey{{Tenant: "a", KeySHA256: "xyz"}} }, "auth.keys[0].key_sha256"},
		{"both", func(c *Config) {
			c.Auth.Keys = []AuthKey{{Tenant: "a", Key: "0123456789abcdef0123", KeySHA256: strings.Repeat("ab", 32)}}
		}, "auth.keys[0]"},
		{"duplicate", func(c *Config) {
			c.Auth.Keys = []AuthKey{{Tenant: "a", Key: "0123456789abcdef0123"}, {Tenant: "b", Key: "0123456789abcdef0123"}}
		}, "auth.keys[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(c)
			err := c.Validate()
			if tc.key == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.key+":") {
				t.Fatalf("Validate = %v, want an error naming %s", err, tc.key)
			}
		})
	}
}
