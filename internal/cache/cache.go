// Package cache backs sharedcache.Store, the store the response_cache plugin
// keeps finished answers in: an in-process LRU bounded in bytes, or Redis
// shared by every replica. The app opens one store at start (Open) and
// hands it to every request through ChatManage.Cache.
package cache

import (
	"errors"
	"fmt"

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

// Options choose the store Open returns. They are read at start only.
type Options struct {
	// Store names the store, by the stream store it goes with
	// (stream_store): "redis" when replicas share streams, so that they
	// share answers too; "memory" for one server.
	Store string
	// Redis is the server of the redis store.
	Redis RedisOptions
	// MaxBytes is the memory store's budget, all values together;
	// 0 = DefaultMaxBytes.
	MaxBytes int64
}

// Open returns the store opts.Store names, or an error naming the known
// ones.
func Open(opts Options) (Store, error) {
	open, err := stores.Get(opts.Store)
	if err != nil {
		return nil, fmt.Errorf("stream_store: %w", err)
	}
	return open(opts), nil
}

// stores are the cache stores, by the value of `stream_store` they go
// with.
var stores = registry.New[func(Options) Store]("stream store")

func init() {
	stores.Register("memory", func(o Options) Store { return NewMemory(MemoryOptions{MaxBytes: o.MaxBytes}) })
	stores.Register("redis", func(o Options) Store { return NewRedis(o.Redis) })
}
