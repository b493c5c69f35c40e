package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrUnknownMode is returned (wrapped in a KeyError) by Chain for a chat
// mode that has no pipeline.
var ErrUnknownMode = errors.New("no such chat mode")

// Accepted values. They are sets that grow as implementations land (redis
// for stream_store, postgres for storage.driver); error messages list them.
// The implementations are registered by these names elsewhere (see
// Implementations); internal/app's tests keep the two equal.
var (
	streamStores       = []string{"memory", "redis"}
	storageDrivers     = []string{"sqlite", "postgres"}
	pgvectorModes      = []string{"auto", "off"}
	embeddingProviders = []string{"", "openai"}
	logLevels          = []string{"debug", "info", "warn", "error"}
	logFormats         = []string{"json", "console"}
)

// Implementations returns the values Validate accepts for a key that
// chooses an implementation by name (stream_store, storage.driver,
// knowledge.embedding.provider, where "" means none), or nil for any other
// key. The registries that build them check against it.
func Implementations(key string) []string {
	switch key {
	case "stream_store":
		return slices.Clone(streamStores)
	case "storage.driver":
		return slices.Clone(storageDrivers)
	case "knowledge.embedding.provider":
		return slices.Clone(embeddingProviders)
	}
	return nil
}

// minHeartbeat keeps heartbeats from flooding clients and proxies.
const minHeartbeat = time.Second

// MaxStreamBytes bounds stream.max_bytes: the memory store addresses a
// stream's retained events with 32-bit offsets.
const MaxStreamBytes = 1 << 30

// minPartialSaveInterval keeps partial saves from turning every stream
// into a steady stream of database writes.
const minPartialSaveInterval = 100 * time.Millisecond

// Validate checks the snapshot and returns every problem found, one
// KeyError per key, joined. Model entries are checked by the model
// registry and plugin settings by each plugin; Validate only checks that
// models and pipelines are well-formed.
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, keyErr(key, format, args...))
	}

	if err := checkHostPort(c.Server.Addr); err != nil {
		add("server.addr", "%v", err)
	}
	for _, d := range []struct {
		key string
		val time.Duration
	}{
		{"server.read_header_timeout", c.Server.ReadHeaderTimeout},
		{"server.write_timeout", c.Server.WriteTimeout},
		{"server.shutdown_grace", c.Server.ShutdownGrace},
		{"server.body_read_timeout", c.Server.BodyReadTimeout},
		{"stream.retention", c.Stream.Retention},
		{"stream.max_duration", c.Stream.MaxDuration},
	} {
		if d.val <= 0 {
			add(d.key, "must be a positive duration like \"30s\", got %v", d.val)
		}
	}
	if c.Stream.Heartbeat < minHeartbeat {
		add("stream.heartbeat", "must be at least %v, got %v", minHeartbeat, c.Stream.Heartbeat)
	}
	for _, n := range []struct {
		key string
		val int64
	}{
		{"limits.max_body_bytes", c.Limits.MaxBodyBytes},
		{"limits.max_question_chars", int64(c.Limits.MaxQuestionChars)},
		{"limits.max_title_chars", int64(c.Limits.MaxTitleChars)},
		{"stream.max_events", int64(c.Stream.MaxEvents)},
		{"stream.max_bytes", c.Stream.MaxBytes},
	} {
		if n.val <= 0 {
			add(n.key, "must be greater than 0, got %d", n.val)
		}
	}

	if c.Stream.MaxBytes > MaxStreamBytes {
		add("stream.max_bytes", "must be at most %d (1 GiB) a stream, got %d", int64(MaxStreamBytes), c.Stream.MaxBytes)
	}
	if c.Stream.MemoryMaxBytes < 0 {
		add("stream.memory_max_bytes", "must be 0 (sized to the machine) or a number of bytes, got %d", c.Stream.MemoryMaxBytes)
	} else if c.Stream.MemoryMaxBytes > 0 && c.Stream.MemoryMaxBytes < c.Stream.MaxBytes {
		add("stream.memory_max_bytes", "must be at least stream.max_bytes (%d) so one stream fits, got %d",
			c.Stream.MaxBytes, c.Stream.MemoryMaxBytes)
	}
	if c.Stream.PartialSaveDeltas < 0 {
		add("stream.partial_save_deltas", "must be 0 (off) or a number of deltas, got %d", c.Stream.PartialSaveDeltas)
	}
	if c.Stream.PartialSaveInterval != 0 && c.Stream.PartialSaveInterval < minPartialSaveInterval {
		add("stream.partial_save_interval", "must be 0 (off) or at least %v, got %v", minPartialSaveInterval, c.Stream.PartialSaveInterval)
	}

	oneOf := func(key, val string, accepted []string) {
		if !slices.Contains(accepted, val) {
			add(key, "%q is not supported (accepted: %s)", val, strings.Join(accepted, ", "))
		}
	}
	oneOf("log.level", c.Log.Level, logLevels)
	oneOf("log.format", c.Log.Format, logFormats)
	oneOf("stream_store", c.StreamStore, streamStores)
	oneOf("storage.driver", c.Storage.Driver, storageDrivers)
	if c.Storage.Driver == "sqlite" && strings.TrimSpace(c.Storage.SQLite.Path) == "" {
		add("storage.sqlite.path", "must name the database file")
	}
	if c.Storage.Driver == "postgres" {
		if strings.TrimSpace(c.Postgres.DSN) == "" {
			add("postgres.dsn", "required when storage.driver is postgres (e.g. postgres://chatpipe@db:5432/chatpipe, or %s_POSTGRES_DSN)", EnvPrefix)
		}
		if c.Postgres.MaxConns <= 0 {
			add("postgres.max_conns", "must be greater than 0, got %d", c.Postgres.MaxConns)
		}
		oneOf("postgres.pgvector", c.Postgres.Pgvector, pgvectorModes)
		if c.Postgres.HNSWEfSearch < 1 || c.Postgres.HNSWEfSearch > 1000 {
			add("postgres.hnsw_ef_search", "must be between 1 and 1000 (pgvector's hnsw.ef_search), got %d", c.Postgres.HNSWEfSearch)
		}
	}
	if c.StreamStore == "redis" {
		if err := checkHostPort(c.Redis.Addr); err != nil {
			add("redis.addr", "%v", err)
		}
		for _, d := range []struct {
			key string
			val time.Duration
		}{{"redis.live_ttl", c.Redis.LiveTTL}, {"redis.finished_ttl", c.Redis.FinishedTTL}, {"redis.lease_ttl", c.Redis.LeaseTTL}} {
			if d.val <= 0 {
				add(d.key, "must be a positive duration, got %v", d.val)
			}
		}
		if c.Redis.LeaseTTL > 0 && c.Redis.LeaseTTL < time.Second {
			add("redis.lease_ttl", "must be at least 1s, got %v", c.Redis.LeaseTTL)
		}
		if c.Redis.QueueSize <= 0 {
			add("redis.queue_size", "must be greater than 0, got %d", c.Redis.QueueSize)
		}
	}
	if c.Titles.Enabled {
		if c.Titles.Model != "" {
			if _, ok := c.Models[c.Titles.Model]; !ok {
				add("titles.model", "%q is not defined under models", c.Titles.Model)
			}
		}
		if !strings.Contains(c.Titles.Prompt, "{question}") {
			add("titles.prompt", "must contain {question}")
		}
		if c.Titles.MaxChars < 10 {
			add("titles.max_chars", "must be at least 10, got %d", c.Titles.MaxChars)
		}
		if c.Titles.Timeout <= 0 {
			add("titles.timeout", "must be a positive duration like \"20s\", got %v", c.Titles.Timeout)
		}
	}
	if c.Background.MaxJobs <= 0 {
		add("background.max_jobs", "must be greater than 0, got %d", c.Background.MaxJobs)
	}
	if c.Background.StreamWait < 0 {
		add("background.stream_wait", "must be 0 (never wait) or a duration like \"3s\", got %v", c.Background.StreamWait)
	}
	if c.Limits.MaxConcurrentStreams < 0 || c.Limits.RatePerSecond < 0 {
		add("limits", "max_concurrent_streams and rate_per_second must not be negative (0 = unlimited)")
	}
	if c.Limits.FailedAuthPerMinute < 0 {
		add("limits.failed_auth_per_minute", "must not be negative (0 = unlimited), got %d", c.Limits.FailedAuthPerMinute)
	}
	for i, p := range c.Server.TrustedProxies {
		if !validProxy(p) {
			add(fmt.Sprintf("server.trusted_proxies[%d]", i), "%q is not an IP address or a CIDR like 10.0.0.0/8", p)
		}
	}
	if c.Limits.RatePerSecond > 0 && c.Limits.RateBurst < 1 {
		add("limits.rate_burst", "must be at least 1 when rate_per_second is set, got %d", c.Limits.RateBurst)
	}
	for i, o := range c.CORS.AllowedOrigins {
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			add(fmt.Sprintf("cors.allowed_origins[%d]", i), "%q is not an origin like https://chat.example.com", o)
		}
	}
	if c.Metrics.Enabled && !strings.HasPrefix(c.Metrics.Path, "/") {
		add("metrics.path", "must start with /, got %q", c.Metrics.Path)
	}
	tr := c.Telemetry.Traces
	if p := tr.Protocol; p != "" && p != "http/protobuf" && p != "grpc" {
		add("telemetry.traces.protocol", "must be http/protobuf or grpc (or empty: OTEL_EXPORTER_OTLP_PROTOCOL), got %q", p)
	}
	if e := tr.Endpoint; e != "" && !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
		add("telemetry.traces.endpoint", "must be a URL like http://collector:4318, got %q", e)
	}
	if tr.SamplingRatio < 0 || tr.SamplingRatio > 1 {
		add("telemetry.traces.sampling_ratio", "must be between 0 and 1, got %v", tr.SamplingRatio)
	}
	if tr.Timeout < 0 {
		add("telemetry.traces.timeout", "must not be negative, got %s", tr.Timeout)
	}
	if in := c.Telemetry.Inspector; in.Enabled && in.MaxBytes < 1024 {
		add("telemetry.inspector.max_bytes", "must be at least 1024 (a record's stages and calls need room), got %d", in.MaxBytes)
	}
	if in := c.Telemetry.Inspector; in.Retention < 0 {
		add("telemetry.inspector.retention", "must not be negative (0 keeps records as long as their messages), got %s", in.Retention)
	}

	k := c.Knowledge
	for _, n := range []struct {
		key string
		val int64
	}{
		{"knowledge.max_upload_bytes", k.MaxUploadBytes},
		{"knowledge.max_file_bytes", k.MaxFileBytes},
		{"knowledge.chunking.target_tokens", int64(k.Chunking.TargetTokens)},
		{"knowledge.embedding.batch_size", int64(k.Embedding.BatchSize)},
		{"knowledge.search.top_k", int64(k.Search.TopK)},
		{"knowledge.search.rrf_k", int64(k.Search.RRFK)},
		{"knowledge.ingest.workers", int64(k.Ingest.Workers)},
		{"knowledge.ingest.queue", int64(k.Ingest.Queue)},
		{"knowledge.ingest.max_attempts", int64(k.Ingest.MaxAttempts)},
	} {
		if n.val <= 0 {
			add(n.key, "must be greater than 0, got %d", n.val)
		}
	}
	if k.Chunking.OverlapTokens < 0 || k.Chunking.OverlapTokens >= k.Chunking.TargetTokens {
		add("knowledge.chunking.overlap_tokens", "must be at least 0 and less than target_tokens (%d), got %d",
			k.Chunking.TargetTokens, k.Chunking.OverlapTokens)
	}
	if k.Search.LeadWeight < 0 || k.Search.LeadWeight > 10 {
		add("knowledge.search.lead_weight", "must be between 0 (off) and 10, got %g", k.Search.LeadWeight)
	}
	if k.Search.NameWeight < 0 || k.Search.NameWeight > 10 {
		add("knowledge.search.name_weight", "must be between 0 (off) and 10, got %g", k.Search.NameWeight)
	}
	if k.Search.SynonymWeight < 0 || k.Search.SynonymWeight > 10 {
		add("knowledge.search.synonym_weight", "must be between 0 (off) and 10, got %g", k.Search.SynonymWeight)
	}
	if k.Search.KeywordWeight < 0 || k.Search.VectorWeight < 0 || k.Search.KeywordWeight+k.Search.VectorWeight == 0 {
		add("knowledge.search", "keyword_weight and vector_weight must not be negative, and not both 0")
	}
	if k.Ingest.BackgroundBytes < 0 {
		add("knowledge.ingest.background_bytes", "must be at least 0, got %d", k.Ingest.BackgroundBytes)
	}
	if k.Ingest.StaleAfter < time.Second {
		add("knowledge.ingest.stale_after", "must be at least 1s, got %v", k.Ingest.StaleAfter)
	}
	oneOf("knowledge.embedding.provider", k.Embedding.Provider, embeddingProviders)
	if k.Embedding.Provider != "" {
		if strings.TrimSpace(k.Embedding.BaseURL) == "" {
			add("knowledge.embedding.base_url", "required when an embedding provider is set")
		}
		if strings.TrimSpace(k.Embedding.Model) == "" {
			add("knowledge.embedding.model", "required when an embedding provider is set")
		}
		if k.Embedding.Timeout <= 0 {
			add("knowledge.embedding.timeout", "must be a positive duration, got %v", k.Embedding.Timeout)
		}
	}

	c.validateAuth(add)
	c.validateMCP(add)

	if len(c.Models) == 0 {
		add("models", "define at least one model")
	}
	for _, name := range sortedKeys(c.Models) {
		if strings.TrimSpace(name) == "" {
			add("models", "a model has an empty name")
		}
	}

	if len(c.Pipelines) == 0 {
		add("pipelines", "define at least one chat mode")
	}
	if _, err := c.Chains(); err != nil {
		errs = append(errs, err)
	}
	switch {
	case c.DefaultMode == "":
		add("default_mode", "must name one of the pipelines (%s)", strings.Join(sortedKeys(c.Pipelines), ", "))
	case !hasKey(c.Pipelines, c.DefaultMode):
		add("default_mode", "%q has no pipeline (pipelines: %s)", c.DefaultMode, strings.Join(sortedKeys(c.Pipelines), ", "))
	}
	return errors.Join(errs...)
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port like \"127.0.0.1:8080\" or \":8080\", got %q", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

// Chain parses the plugin list of a chat mode. Mode names are
// case-insensitive, like every key in config.yaml. An unknown mode is a
// KeyError wrapping ErrUnknownMode.
func (c *Config) Chain(mode string) ([]PipelineEntry, error) {
	mode = strings.ToLower(strings.TrimSpace(mode))
	raw, ok := c.Pipelines[mode]
	if !ok {
		return nil, &KeyError{
			Key: "pipelines." + mode,
			Err: fmt.Errorf("%w (modes: %s)", ErrUnknownMode, strings.Join(sortedKeys(c.Pipelines), ", ")),
		}
	}
	return parseChain(mode, raw)
}

// Chains parses every mode's plugin list; the error joins one KeyError per
// bad entry.
func (c *Config) Chains() (map[string][]PipelineEntry, error) {
	out := make(map[string][]PipelineEntry, len(c.Pipelines))
	var errs []error
	for _, mode := range sortedKeys(c.Pipelines) {
		chain, err := parseChain(mode, c.Pipelines[mode])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[mode] = chain
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

const entryShape = "want a plugin name or {name: {settings}}"

func parseChain(mode string, raw []any) ([]PipelineEntry, error) {
	key := "pipelines." + mode
	if len(raw) == 0 {
		return nil, keyErr(key, "is empty; list at least one plugin")
	}
	chain := make([]PipelineEntry, 0, len(raw))
	var errs []error
	for i, item := range raw {
		entry, err := parseEntry(item)
		if err != nil {
			errs = append(errs, &KeyError{Key: fmt.Sprintf("%s[%d]", key, i), Err: err})
			continue
		}
		chain = append(chain, entry)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return chain, nil
}

// parseEntry reads `name` or `{name: {settings}}`. Plugin names are
// lower-cased, as viper lower-cases the plugins.<name> keys they refer to.
func parseEntry(item any) (PipelineEntry, error) {
	switch v := item.(type) {
	case string:
		name := strings.ToLower(strings.TrimSpace(v))
		if name == "" {
			return PipelineEntry{}, errors.New("empty plugin name")
		}
		return PipelineEntry{Name: name}, nil
	case map[string]any:
		if len(v) != 1 {
			return PipelineEntry{}, fmt.Errorf("%s, got a mapping with %d keys (%s)", entryShape, len(v), strings.Join(sortedKeys(v), ", "))
		}
		for name, settings := range v {
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "" {
				return PipelineEntry{}, errors.New("empty plugin name")
			}
			switch s := settings.(type) {
			case nil:
				return PipelineEntry{Name: name}, nil
			case map[string]any:
				return PipelineEntry{Name: name, Overrides: s}, nil
			default:
				return PipelineEntry{}, fmt.Errorf("%s, got %s for %s's settings", entryShape, describe(name, settings), name)
			}
		}
	}
	return PipelineEntry{}, fmt.Errorf("%s, got %s", entryShape, describe("", item))
}

// validProxy reports whether p is an IP address or a CIDR block.
func validProxy(p string) bool {
	if strings.Contains(p, "/") {
		_, err := netip.ParsePrefix(p)
		return err == nil
	}
	_, err := netip.ParseAddr(p)
	return err == nil
}
