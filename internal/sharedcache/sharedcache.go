// Package sharedcache is the contract of the cache plugins keep results in
// across requests (response_cache): expiring byte values under string keys.
// internal/cache implements it (memory, Redis); requests carry it in
// ChatManage.Cache. It is a leaf (standard library only), so the cache
// backends never import the chain.
package sharedcache

import (
	"context"
	"time"
)

// Store is a shared store of expiring byte values. The app backs it with
// memory, or with Redis when replicas share streams. Implementations are
// safe for concurrent use and may evict a value before its ttl to stay in
// budget.
type Store interface {
	// Get returns the value stored under key; ok is false when there is
	// none or it expired.
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)
	// Set stores value under key for ttl, replacing any earlier value.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}
