package app

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/cluster"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/history/pgstore"
	"github.com/chatpipe/chatpipe/internal/history/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	kpgstore "github.com/chatpipe/chatpipe/internal/knowledge/pgstore"
	ksqlite "github.com/chatpipe/chatpipe/internal/knowledge/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/registry"
	"github.com/chatpipe/chatpipe/internal/stream"
	"github.com/chatpipe/chatpipe/internal/stream/redisstore"
)

// The stores, by the value the operator writes in config.yaml: the
// history and knowledge stores by storage.driver, the stream store by
// stream_store. The store packages know nothing of config or of these
// registries; the factories below map config onto them. (The answer
// cache follows stream_store too: internal/cache registers its own.)
var (
	historyStores   = registry.New[func(ctx context.Context, cfg *config.Config) (history.Store, error)]("storage driver")
	knowledgeStores = registry.New[func(ctx context.Context, cfg *config.Config, log *zap.Logger) (knowledge.Store, error)]("storage driver")
	// streamStores return what runs and readers use, given a.localStreams
	// (this process's memory store, always there).
	streamStores = registry.New[func(a *App, ctx context.Context, cfg *config.Config) (stream.Store, error)]("stream store")
)

func init() {
	historyStores.Register("sqlite", openSQLiteHistory)
	historyStores.Register("postgres", openPostgresHistory)
	knowledgeStores.Register("sqlite", openSQLiteKnowledge)
	knowledgeStores.Register("postgres", openPostgresKnowledge)
	streamStores.Register("memory", func(a *App, _ context.Context, _ *config.Config) (stream.Store, error) {
		return a.localStreams, nil
	})
	streamStores.Register("redis", (*App).openRedisStreams)
}

func openSQLiteHistory(ctx context.Context, cfg *config.Config) (history.Store, error) {
	s, err := sqlitestore.Open(ctx, cfg.Storage.SQLite.Path)
	if err != nil {
		return nil, fmt.Errorf("storage.sqlite.path: %w", err)
	}
	return s, nil
}

func openPostgresHistory(ctx context.Context, cfg *config.Config) (history.Store, error) {
	s, err := pgstore.Open(ctx, cfg.Postgres.DSN, pgstore.Options{MaxConns: int32(cfg.Postgres.MaxConns)})
	if err != nil {
		return nil, fmt.Errorf("postgres.dsn: %w", err)
	}
	return s, nil
}

// openSQLiteKnowledge keeps the knowledge base in the history's SQLite file.
func openSQLiteKnowledge(ctx context.Context, cfg *config.Config, _ *zap.Logger) (knowledge.Store, error) {
	return ksqlite.Open(ctx, cfg.Storage.SQLite.Path)
}

// openPostgresKnowledge keeps the knowledge base in the history's
// database, with vectors in pgvector unless postgres.pgvector is off.
func openPostgresKnowledge(ctx context.Context, cfg *config.Config, log *zap.Logger) (knowledge.Store, error) {
	s, err := kpgstore.Open(ctx, cfg.Postgres.DSN, kpgstore.Options{
		MaxConns:   int32(cfg.Postgres.MaxConns),
		NoPgvector: cfg.Postgres.Pgvector == "off",
		EfSearch:   cfg.Postgres.HNSWEfSearch,
	})
	if err != nil {
		return nil, err
	}
	log.Info("knowledge: vector search via " + s.VectorSearchBackend())
	return s, nil
}

// openRedisStreams shares streams between replicas: this replica's
// readers read its memory store, everyone's read Redis (stream.Tiered),
// and the cluster coordinator carries stop signals and liveness.
func (a *App) openRedisStreams(ctx context.Context, cfg *config.Config) (stream.Store, error) {
	routeRedisLogs(a.log)
	rs, err := redisstore.Open(ctx, redisOptions(cfg), redisstore.Options{MaxEvents: cfg.Stream.MaxEvents, Logger: a.log})
	if err != nil {
		return nil, fmt.Errorf("redis.addr: %w", err)
	}
	a.redis = rs
	a.cluster = cluster.New(cluster.Options{
		Client:   rs.Client(),
		Prefix:   cfg.Redis.KeyPrefix,
		LeaseTTL: cfg.Redis.LeaseTTL,
		Logger:   a.log,
		OnLost: func(ctx context.Context, streamID string) {
			<-a.started // a.runs is set before the first lost generation can be handled
			if err := a.runs.EndLost(ctx, rs, streamID); err != nil {
				a.log.Error("ending a lost generation failed", zap.String("stream_id", streamID), zap.Error(err))
			}
		},
	})
	return stream.NewTiered(a.localStreams, rs), nil
}
