// Package cache backs pipeline.Cache, the store the response_cache plugin
// keeps finished answers in: an in-process LRU bounded in bytes, or Redis
// shared by every replica. The app opens one store at start (Open) and
// hands it to every request through ChatManage.Cache.
package cache

import (
	"errors"

	"github.com/chatpipe/chatpipe/pipeline"
)

// Store is a pipeline.Cache the app owns and closes.
type Store interface {
	pipeline.Cache
	Close() error
}

// DefaultMaxBytes is the memory store's budget when none is configured.
const DefaultMaxBytes = 64 << 20

// ErrTooLarge is returned by Set for a value the store will never keep.
var ErrTooLarge = errors.New("cache: value larger than the store's budget")

// Options choose the store Open returns. They are read at start only.
type Options struct {
	// Shared makes the store Redis, so that replicas, which share
	// streams, share answers too; off, it is memory.
	Shared bool
	// Redis is the server of the shared store.
	Redis RedisOptions
	// MaxBytes is the memory store's budget, all values together;
	// 0 = DefaultMaxBytes.
	MaxBytes int64
}

// Open returns the store opts ask for: Redis when Shared, otherwise
// memory with the budget MaxBytes.
func Open(opts Options) Store {
	if opts.Shared {
		return NewRedis(opts.Redis)
	}
	return NewMemory(MemoryOptions{MaxBytes: opts.MaxBytes})
}
