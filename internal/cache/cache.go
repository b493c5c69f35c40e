// Package cache backs sharedcache.Store, the store the response_cache plugin
// keeps finished answers in: an in-process LRU bounded in bytes, or Redis
// shared by every replica. The app opens one store at start (Open) and
// hands it to every request through ChatManage.Cache.
package cache

import (
	"errors"
	"fmt"

	"github.com/go-viper/mapstructure/v2"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/registry"
	"github.com/chatpipe/chatpipe/internal/sharedcache"
)

// Store is a sharedcache.Store the app owns and closes.
type Store interface {
	sharedcache.Store
	Close() error
}

// DefaultMaxBytes is the memory store's budget when none is configured.
const DefaultMaxBytes = 64 << 20

// ErrTooLarge is returned by Set for a value the store will never keep.
var ErrTooLarge = errors.New("cache: value larger than the store's budget")

// Open returns the store cfg asks for: Redis (config.Redis, keys under its
// key_prefix) when stream_store is redis, because replicas then share
// streams and should share answers too; otherwise memory with the budget
// plugins.response_cache.max_bytes. Both are read at start only.
func Open(cfg *config.Config) (Store, error) {
	open, err := stores.Get(cfg.StreamStore)
	if err != nil {
		return nil, fmt.Errorf("stream_store: %w", err)
	}
	return open(cfg)
}

// stores are the cache stores, by the value of `stream_store` they go
// with.
var stores = registry.New[func(cfg *config.Config) (Store, error)]("stream store")

func init() {
	stores.Register("memory", func(cfg *config.Config) (Store, error) {
		budget, err := MemoryBudget(cfg.Plugins)
		if err != nil {
			return nil, err
		}
		return NewMemory(MemoryOptions{MaxBytes: budget}), nil
	})
	stores.Register("redis", func(cfg *config.Config) (Store, error) { return NewRedis(cfg.Redis), nil })
}

// MemoryBudget reads plugins.response_cache.max_bytes from the plugin
// sections: the memory store's budget, shared by every mode.
func MemoryBudget(sections map[string]map[string]any) (int64, error) {
	v, ok := sections["response_cache"]["max_bytes"]
	if !ok || v == nil {
		return DefaultMaxBytes, nil
	}
	var n int64
	if err := mapstructure.WeakDecode(v, &n); err != nil || n < 0 {
		return 0, fmt.Errorf("plugins.response_cache.max_bytes: want a number of bytes, 0 or more, got %v", v)
	}
	if n == 0 {
		return DefaultMaxBytes, nil
	}
	return n, nil
}
