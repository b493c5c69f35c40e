package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Redis keeps values in Redis under <key_prefix>cache:<key>, with Redis's
// own expiry, so every replica shares them. Redis bounds the total with its
// maxmemory policy (allkeys-lru or volatile-lru suits a cache); the plugin
// bounds each value.
type Redis struct {
	client *redis.Client
	prefix string
}

// RedisOptions name the Redis server of the shared store.
type RedisOptions struct {
	Addr     string // host:port
	Password string // "" = none
	DB       int    // database number
	// KeyPrefix starts every key the store writes; the store adds
	// "cache:" after it.
	KeyPrefix string
}

// NewRedis returns a store on the Redis cfg names. It does not connect
// until the first call, and a Redis that is away makes calls fail fast
// (a cache miss to the plugin) rather than slow answers down.
func NewRedis(cfg RedisOptions) *Redis {
	return &Redis{
		client: redis.NewClient(&redis.Options{
			Addr:                  cfg.Addr,
			Password:              cfg.Password,
			DB:                    cfg.DB,
			MaxRetries:            -1, // a cache lookup is not worth a retry
			DialTimeout:           time.Second,
			DialerRetries:         1,
			ReadTimeout:           time.Second,
			WriteTimeout:          time.Second,
			ContextTimeoutEnabled: true,
			DisableIdentity:       true,
			MaintNotificationsConfig: &maintnotifications.Config{
				Mode: maintnotifications.ModeDisabled,
			},
		}),
		prefix: cfg.KeyPrefix + "cache:",
	}
}

// Get implements sharedcache.Store.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := r.client.Get(ctx, r.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cache: redis get: %w", err)
	}
	return v, true, nil
}

// Set implements sharedcache.Store. A ttl of 0 or less deletes the key.
func (r *Redis) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	var err error
	if ttl <= 0 {
		err = r.client.Del(ctx, r.prefix+key).Err()
	} else {
		err = r.client.Set(ctx, r.prefix+key, value, ttl).Err()
	}
	if err != nil {
		return fmt.Errorf("cache: redis set: %w", err)
	}
	return nil
}

// Close implements Store.
func (r *Redis) Close() error { return r.client.Close() }

var _ Store = (*Redis)(nil)
