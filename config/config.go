// Package config holds chatpipe's typed configuration: loading config.yaml
// with viper, CHATPIPE_* environment overrides, validation that names the
// key at fault, and hot reload into an atomic snapshot.
package config

import (
	"path/filepath"
	"time"
)

// Config is one immutable configuration snapshot. Never mutate a Config
// that has been published; build a new one.
type Config struct {
	Server      Server                    `mapstructure:"server"`
	Log         Log                       `mapstructure:"log"`
	Limits      Limits                    `mapstructure:"limits"`
	Stream      Stream                    `mapstructure:"stream"`
	StreamStore string                    `mapstructure:"stream_store"` // memory or redis
	Storage     Storage                   `mapstructure:"storage"`
	Knowledge   Knowledge                 `mapstructure:"knowledge"`
	Auth        Auth                      `mapstructure:"auth"`
	CORS        CORS                      `mapstructure:"cors"`
	Metrics     Metrics                   `mapstructure:"metrics"`
	Telemetry   Telemetry                 `mapstructure:"telemetry"`
	Redis       Redis                     `mapstructure:"redis"`
	Postgres    Postgres                  `mapstructure:"postgres"`
	Models      map[string]Model          `mapstructure:"models"`
	DefaultMode string                    `mapstructure:"default_mode"`
	Pipelines   map[string][]any          `mapstructure:"pipelines"` // mode -> plugin list; see Chain
	Plugins     map[string]map[string]any `mapstructure:"plugins"`
	MCP         MCP                       `mapstructure:"mcp"`        // MCP server at /mcp and MCP servers' tools (mcp.go)
	Titles      Titles                    `mapstructure:"titles"`     // generated session titles (meta.go)
	Background  Background                `mapstructure:"background"` // model jobs after a turn (meta.go)

	// File is the config file this snapshot was read from; empty when the
	// default config.yaml does not exist and chatpipe runs on built-in
	// defaults (plus CHATPIPE_* variables). It is not a config key.
	File string `mapstructure:"-"`
}

// Server is the HTTP listener.
type Server struct {
	Addr              string        `mapstructure:"addr"`
	ReadHeaderTimeout time.Duration `mapstructure:"read_header_timeout"`
	WriteTimeout      time.Duration `mapstructure:"write_timeout"` // per write; SSE writes get a fresh deadline each time
	ShutdownGrace     time.Duration `mapstructure:"shutdown_grace"`
	// BodyReadTimeout bounds reading a request's body, from its first
	// byte; streamed responses are not affected.
	BodyReadTimeout time.Duration `mapstructure:"body_read_timeout"`
	// TrustedProxies are the IPs and CIDRs whose X-Forwarded-For and
	// X-Real-IP headers name the client; empty = trust no one (the client
	// is the socket's peer).
	TrustedProxies []string `mapstructure:"trusted_proxies"`
	// Pprof serves Go's runtime profiles at /debug/pprof/ (heap,
	// goroutine, CPU), for diagnosing memory and CPU on a running server.
	Pprof bool `mapstructure:"pprof"`
}

// Log configures zap.
type Log struct {
	Level  string `mapstructure:"level"`  // debug | info | warn | error
	Format string `mapstructure:"format"` // json | console
}

// Limits bound what a request may ask for.
type Limits struct {
	MaxBodyBytes         int64   `mapstructure:"max_body_bytes"`
	MaxQuestionChars     int     `mapstructure:"max_question_chars"`
	MaxTitleChars        int     `mapstructure:"max_title_chars"`
	MaxConcurrentStreams int     `mapstructure:"max_concurrent_streams"` // live generations per API key; 0 = unlimited
	RatePerSecond        float64 `mapstructure:"rate_per_second"`        // requests per second per API key (token bucket); 0 = unlimited
	RateBurst            int     `mapstructure:"rate_burst"`             // bucket size: requests allowed at once
	FailedAuthPerMinute  int     `mapstructure:"failed_auth_per_minute"` // requests with a wrong or missing key per client IP per minute (429 beyond); 0 = unlimited
}

// Stream configures the stream lifecycle and the stream store.
type Stream struct {
	Heartbeat   time.Duration `mapstructure:"heartbeat"`    // ": ping" comment interval
	MaxEvents   int           `mapstructure:"max_events"`   // events retained per stream for replay
	MaxBytes    int64         `mapstructure:"max_bytes"`    // bytes retained per stream for replay
	Retention   time.Duration `mapstructure:"retention"`    // how long a finished stream stays replayable
	MaxDuration time.Duration `mapstructure:"max_duration"` // a generation running longer is stopped as failed
	// MemoryMaxBytes bounds the in-memory stream store, all streams
	// together; 0 = sized to the machine (see stream.MemoryOptions).
	MemoryMaxBytes int64 `mapstructure:"memory_max_bytes"`
	// PartialSaveDeltas and PartialSaveInterval: while an answer streams,
	// the text so far is saved after this many deltas or this long,
	// whichever comes first (0 and 0 = only the final save).
	PartialSaveDeltas   int           `mapstructure:"partial_save_deltas"`
	PartialSaveInterval time.Duration `mapstructure:"partial_save_interval"`
}

// Storage selects the history and knowledge stores.
type Storage struct {
	Driver string `mapstructure:"driver"` // sqlite | postgres
	SQLite SQLite `mapstructure:"sqlite"`
}

// SQLite is the embedded history store.
type SQLite struct {
	Path string `mapstructure:"path"`
}

// Model is one named chat model. Its String method never prints APIKey.
type Model struct {
	Provider    string        `mapstructure:"provider"` // demo | openai | ollama
	BaseURL     string        `mapstructure:"base_url"`
	Model       string        `mapstructure:"model"`
	APIKey      string        `mapstructure:"api_key"`
	Temperature *float32      `mapstructure:"temperature"`
	MaxTokens   int           `mapstructure:"max_tokens"`
	Retries     *int          `mapstructure:"retries"`     // retries of a call that fails before its first chunk (default 2)
	Timeout     time.Duration `mapstructure:"timeout"`     // connect + response headers; the stream itself is bounded by stream.max_duration
	Client      string        `mapstructure:"client"`      // openai only: lean (default) | eino
	Thinking    bool          `mapstructure:"thinking"`    // ollama only: ask the model to think
	ChunkDelay  time.Duration `mapstructure:"chunk_delay"` // demo only: pause between streamed chunks
	// StreamRetry retries a call whose stream breaks after partial output.
	StreamRetry StreamRetry `mapstructure:"stream_retry"`
}

// StreamRetry is a model's mid-stream retry: when its stream breaks after
// partial output in a way a new attempt may fix (a dropped connection, a
// stall past a deadline, a malformed chunk), the attempt's output is
// withdrawn (model_call.finished with committed false) and the call is
// made again, with a note to the model that its previous attempt was cut
// off.
type StreamRetry struct {
	// Attempts bounds the attempts of one call, the first included:
	// 0 = the default (2), 1 = off.
	Attempts int `mapstructure:"attempts"`
}

// PipelineEntry is one element of a mode's plugin list. In YAML it is
// either a plugin name or a one-key map from the name to settings that
// override the plugin's global section for this mode:
//
//	pipelines:
//	  chat:
//	    - load_history
//	    - chat_completion_stream: {model: fast}
type PipelineEntry struct {
	Name      string         // lower-cased, like the plugins.<name> key it refers to
	Overrides map[string]any // nil when none; shared with the Config, so read-only
}

// Knowledge configures the knowledge base: ingestion, embeddings and the
// hybrid search that the search plugin and hit testing share. It lives in
// the history store's database (storage.sqlite.path).
type Knowledge struct {
	SampleDocs     bool      `mapstructure:"sample_docs"`      // load the bundled sample documents when the knowledge base is empty
	MaxUploadBytes int64     `mapstructure:"max_upload_bytes"` // largest text document accepted (.txt, .md, .html, JSON)
	MaxFileBytes   int64     `mapstructure:"max_file_bytes"`   // largest PDF, DOCX, PPTX, XLSX or CSV file accepted
	Chunking       Chunking  `mapstructure:"chunking"`
	Embedding      Embedding `mapstructure:"embedding"`
	Search         Search    `mapstructure:"search"`
	Ingest         Ingest    `mapstructure:"ingest"`
}

// Ingest bounds background ingestion: uploads larger than BackgroundBytes
// are answered 202 at once and parsed, chunked and embedded by Workers
// goroutines, at most Queue waiting; a full queue refuses uploads (503).
// Workers and Queue are read at start.
type Ingest struct {
	Workers         int           `mapstructure:"workers"`          // documents ingested at once in the background
	Queue           int           `mapstructure:"queue"`            // background uploads waiting for a worker; more are refused with 503
	BackgroundBytes int64         `mapstructure:"background_bytes"` // uploads larger than this go to the background (202); smaller ones are ingested before the answer (201)
	StaleAfter      time.Duration `mapstructure:"stale_after"`      // a processing document whose ingest gave no sign of life for this long is resumed (server restarted or died)
	MaxAttempts     int           `mapstructure:"max_attempts"`     // ingests started for one document before it is marked failed
}

// Chunking sizes the passages documents are cut into.
type Chunking struct {
	TargetTokens  int `mapstructure:"target_tokens"`  // aimed-for chunk size
	OverlapTokens int `mapstructure:"overlap_tokens"` // text repeated between neighbouring chunks
}

// Embedding is the optional OpenAI-compatible /v1/embeddings endpoint; with
// no provider, search is keyword-only.
type Embedding struct {
	Provider   string        `mapstructure:"provider"` // "" (off) | openai
	BaseURL    string        `mapstructure:"base_url"`
	Model      string        `mapstructure:"model"`
	APIKey     string        `mapstructure:"api_key"`
	Dimensions int           `mapstructure:"dimensions"` // 0 = the model's default
	BatchSize  int           `mapstructure:"batch_size"` // texts per embeddings request
	Timeout    time.Duration `mapstructure:"timeout"`
}

// Files lists the files, other than the config file itself, that the
// configuration reads (knowledge.search.synonyms_file), absolute: Watch
// reloads the configuration when one of them changes.
func (c *Config) Files() []string {
	var out []string
	if f := c.Knowledge.Search.SynonymsFile; f != "" {
		if abs, err := filepath.Abs(f); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// Search tunes hybrid retrieval: weighted reciprocal rank fusion of the
// keyword and vector rankings.
type Search struct {
	TopK          int     `mapstructure:"top_k"`          // candidates returned
	KeywordWeight float64 `mapstructure:"keyword_weight"` // weight of the bm25 ranking
	VectorWeight  float64 `mapstructure:"vector_weight"`  // weight of the embedding ranking
	RRFK          int     `mapstructure:"rrf_k"`          // fusion score is weight/(rrf_k+rank)
	// LeadWeight: the question's English words scored once more in each
	// document's lead alone, this much against its keyword score (0 =
	// off). See docs/retrieval.md, "An English lead score".
	LeadWeight float64 `mapstructure:"lead_weight"`
	// NameWeight: the words in Latin letters of a question written in
	// Chinese (Japanese, Thai …) — a command, product or acronym it
	// names — scored once more in each document's title and lead, this
	// much against its keyword score (0 = off). See docs/retrieval.md,
	// "Names in a Chinese question".
	NameWeight float64 `mapstructure:"name_weight"`
	// SynonymWeight: the words related to the question's by the synonym
	// groups, searched too and counted this much against the question's
	// own (0 = off). BuiltinSynonyms: the groups chatpipe ships;
	// SynonymsFile: an operator's own groups (one group of
	// comma-separated words per line), read at start and on each reload.
	SynonymWeight   float64 `mapstructure:"synonym_weight"`
	BuiltinSynonyms bool    `mapstructure:"builtin_synonyms"`
	SynonymsFile    string  `mapstructure:"synonyms_file"`
}

// Auth lists the API keys. Each key belongs to a tenant; sessions, streams
// and knowledge documents are visible only to their tenant. With no keys
// chatpipe runs open (everything belongs to the tenant "default"), which
// it refuses on a non-loopback address unless AllowOpen is set.
type Auth struct {
	Keys      []AuthKey `mapstructure:"keys"`
	AllowOpen bool      `mapstructure:"allow_open"`
}

// AuthKey is one API key: the key itself or, better, its SHA-256 in hex.
type AuthKey struct {
	Tenant    string `mapstructure:"tenant"`
	Key       string `mapstructure:"key"`
	KeySHA256 string `mapstructure:"key_sha256"`
	// ManageShared lets the key add and delete shared documents (those
	// every tenant reads).
	ManageShared bool `mapstructure:"manage_shared"`
}

// CORS lets browser frontends on other origins call the API.
type CORS struct {
	AllowedOrigins []string      `mapstructure:"allowed_origins"` // exact origins, e.g. https://chat.example.com; empty = none
	MaxAge         time.Duration `mapstructure:"max_age"`         // how long browsers may cache a preflight answer
}

// Telemetry is tracing (OpenTelemetry) and the turn inspector.
type Telemetry struct {
	Traces Traces `mapstructure:"traces"`
	// CaptureContent lets prompt, answer and tool text into spans; off,
	// spans carry sizes, timings and ids only.
	CaptureContent bool      `mapstructure:"capture_content"`
	Inspector      Inspector `mapstructure:"inspector"`
}

// Traces exports OpenTelemetry traces over OTLP. The OTEL_EXPORTER_OTLP_*
// variables turn tracing on too, and fill what is left empty here.
type Traces struct {
	Enabled       bool              `mapstructure:"enabled"`
	Protocol      string            `mapstructure:"protocol"` // http/protobuf | grpc; "" = OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf
	Endpoint      string            `mapstructure:"endpoint"` // collector URL; "" = OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, else localhost
	Headers       map[string]string `mapstructure:"headers"`
	SamplingRatio float64           `mapstructure:"sampling_ratio"`
	ServiceName   string            `mapstructure:"service_name"`
	Timeout       time.Duration     `mapstructure:"timeout"` // one export, retries included
}

// Inspector keeps what each stage did for every answer, for
// GET /api/v1/messages/{id}/trace and the page's "Why this answer?" panel.
type Inspector struct {
	Enabled       bool          `mapstructure:"enabled"`
	MaxBytes      int           `mapstructure:"max_bytes"`      // per answer; bigger records have long texts cut
	Retention     time.Duration `mapstructure:"retention"`      // records older than this are deleted
	DisabledModes []string      `mapstructure:"disabled_modes"` // chat modes whose answers are not recorded
}

// Metrics exposes Prometheus metrics.
type Metrics struct {
	Enabled bool   `mapstructure:"enabled"`
	Path    string `mapstructure:"path"`
}

// Redis is the shared stream store and stop/liveness channel of several
// replicas (stream_store: redis).
type Redis struct {
	Addr        string        `mapstructure:"addr"`         // host:port (env CHATPIPE_REDIS_ADDR)
	Password    string        `mapstructure:"password"`     // better: CHATPIPE_REDIS_PASSWORD
	DB          int           `mapstructure:"db"`           // database number
	KeyPrefix   string        `mapstructure:"key_prefix"`   // prefix of every key chatpipe writes
	LiveTTL     time.Duration `mapstructure:"live_ttl"`     // expiry of a live stream's key, renewed while it grows
	FinishedTTL time.Duration `mapstructure:"finished_ttl"` // how long a finished stream stays replayable
	LeaseTTL    time.Duration `mapstructure:"lease_ttl"`    // a generator that stops renewing its lease this long is declared lost
	QueueSize   int           `mapstructure:"queue_size"`   // events buffered for Redis (all streams) while it is slow or down
}

// Postgres is the shared history and knowledge store (storage.driver: postgres).
type Postgres struct {
	DSN      string `mapstructure:"dsn"`       // postgres://user@host:5432/db (env CHATPIPE_POSTGRES_DSN)
	MaxConns int    `mapstructure:"max_conns"` // connection pool size
	// Pgvector: "auto" searches vectors through pgvector's HNSW index when
	// the server has the extension (else exactly, over real[] in memory);
	// "off" always uses real[].
	Pgvector string `mapstructure:"pgvector"`
	// HNSWEfSearch is pgvector's hnsw.ef_search (1..1000): candidates one
	// vector search keeps; higher = better recall, slower.
	HNSWEfSearch int `mapstructure:"hnsw_ef_search"`
}
