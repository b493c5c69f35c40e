package auth

import "testing"

func TestKeysMapToTenantsByHash(t *testing.T) {
	k := New(Options{Keys: []Key{
		{Tenant: "acme", Key: "acme-secret-key-0001"},
		{Tenant: "beta", KeySHA256: Hash("beta-secret-key-0002")},
	}})
	if k.Open() {
		t.Fatal("keyed set reports open")
	}
	for key, want := range map[string]string{"acme-secret-key-0001": "acme", "beta-secret-key-0002": "beta"} {
		if got, ok := k.Tenant(key); !ok || got != want {
			t.Errorf("Tenant(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	for _, bad := range []string{"", "acme-secret-key-000", Hash("beta-secret-key-0002")} {
		if _, ok := k.Tenant(bad); ok {
			t.Errorf("Tenant(%q) accepted", bad)
		}
	}
	if !New(Options{}).Open() {
		t.Fatal("empty set is not open")
	}
}
