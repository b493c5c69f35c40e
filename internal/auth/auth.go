// Package auth maps API keys to tenants. Keys are kept and compared only
// as SHA-256 hashes, so a key never sits in memory longer than the request
// that carried it and a configured hash need not be reversible.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// DefaultTenant owns everything when no keys are configured.
const DefaultTenant = "default"

// Keys is an immutable set of API keys.
type Keys struct {
	hashes  [][sha256.Size]byte
	tenants []string
	manage  []bool // the key may add and delete shared documents
}

// Options are the API keys (auth.keys in config.yaml); none = open.
type Options struct {
	Keys []Key
}

// Key is one API key and its tenant. Exactly one of Key and KeySHA256 is
// set.
type Key struct {
	Tenant string
	// Key is the key itself; it is hashed at once and not kept.
	Key string
	// KeySHA256 is the key's SHA-256 in hex (Hash), upper or lower case;
	// the caller has checked it is 64 hex digits.
	KeySHA256 string
	// ManageShared lets the key add and delete shared documents.
	ManageShared bool
}

// New builds the key set from validated options.
func New(opts Options) *Keys {
	k := &Keys{}
	for _, e := range opts.Keys {
		var h [sha256.Size]byte
		if e.Key != "" {
			h = sha256.Sum256([]byte(e.Key))
		} else {
			b, _ := hex.DecodeString(strings.ToLower(e.KeySHA256)) // validated by the caller
			copy(h[:], b)
		}
		k.hashes = append(k.hashes, h)
		k.tenants = append(k.tenants, e.Tenant)
		k.manage = append(k.manage, e.ManageShared)
	}
	return k
}

// Open reports whether no keys are configured: every request is the
// default tenant's.
func (k *Keys) Open() bool { return len(k.hashes) == 0 }

// Tenant returns the tenant of key, comparing its hash with every
// configured hash in constant time.
func (k *Keys) Tenant(key string) (string, bool) {
	tenant, _, ok := k.Lookup(key)
	return tenant, ok
}

// Lookup returns the tenant of key and whether the key may manage the
// shared documents (auth.keys[].manage_shared), as Tenant compares.
func (k *Keys) Lookup(key string) (tenant string, manageShared, ok bool) {
	if key == "" {
		return "", false, false
	}
	h := sha256.Sum256([]byte(key))
	found := -1
	for i := range k.hashes {
		if subtle.ConstantTimeCompare(h[:], k.hashes[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false, false
	}
	return k.tenants[found], k.manage[found], true
}

// Hash is the SHA-256 hex of a key, for config.yaml's key_sha256.
func Hash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}
