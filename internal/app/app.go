// Package app is chatpipe's composition root: it turns a configuration
// into running parts — logger, stores, models, pipelines, run manager and
// the HTTP API — and swaps in new models and pipelines when config.yaml
// changes. main.go only calls it; tests start whole servers through it.
package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/handler"
	"github.com/chatpipe/chatpipe/internal/auth"
	"github.com/chatpipe/chatpipe/internal/cache"
	"github.com/chatpipe/chatpipe/internal/cluster"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/jobs"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/llm"
	"github.com/chatpipe/chatpipe/internal/mcpclient"
	"github.com/chatpipe/chatpipe/internal/metrics"
	"github.com/chatpipe/chatpipe/internal/run"
	"github.com/chatpipe/chatpipe/internal/secrets"
	"github.com/chatpipe/chatpipe/internal/stream"
	"github.com/chatpipe/chatpipe/internal/stream/redisstore"
	"github.com/chatpipe/chatpipe/internal/telemetry"
	"github.com/chatpipe/chatpipe/pipeline"
	_ "github.com/chatpipe/chatpipe/plugins" // registers the built-in plugins
)

// Options adjust how an App is built.
type Options struct {
	// ConfigPath is watched for changes when set (hot reload).
	ConfigPath string
	// Logger replaces the logger built from cfg.Log (tests).
	Logger *zap.Logger
	// Level is the level of Logger, changed on reload; optional.
	Level *zap.AtomicLevel
	// HTTPClient is used for model providers; nil = a default client.
	HTTPClient *http.Client
	// Observers are attached to every stream's bus.
	Observers []run.Observer
	// Samples are the documents loaded into an empty knowledge base when
	// knowledge.sample_docs is on; nil = none.
	Samples fs.FS
}

// App is a configured chatpipe server.
type App struct {
	opts      Options
	log       *zap.Logger
	level     *zap.AtomicLevel
	cfg       atomic.Pointer[config.Config]
	setup     atomic.Pointer[run.Setup]
	keys      atomic.Pointer[auth.Keys]
	history   history.Store
	knowledge *knowledge.Service
	streams   stream.Store // what runs and readers use: localStreams, or tiered over Redis
	// localStreams hold this process's streams; redis and cluster are set
	// when replicas share Redis.
	localStreams stream.Store
	redis        *redisstore.Store
	cluster      *cluster.Coordinator
	metrics      *metrics.Metrics
	started      chan struct{} // closed once the run manager exists
	cache        cache.Store   // finished answers, for response_cache
	runs         *run.Manager
	handler      http.Handler
	hub          *handler.Hub // writes live SSE readers without a goroutine each
	watcher      *config.Watcher
	closing      atomic.Bool
	mcpClients   *mcpclient.Manager // connections to mcp.servers
	tracing      *telemetry.Tracing // OpenTelemetry traces (off: the no-op provider)
	purge        *purgeJob          // deletes turn inspector records past their retention
	jobs         *jobs.Runner       // model jobs after a turn: titles, history compaction
}

// New builds an App from a loaded config. It validates everything first:
// an invalid config fails here with a message naming the key.
func New(ctx context.Context, cfg *config.Config, opts Options) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &App{opts: opts, log: opts.Logger, level: opts.Level, started: make(chan struct{})}
	if a.log == nil {
		var err error
		if a.log, a.level, err = NewLogger(cfg.Log); err != nil {
			return nil, err
		}
	}
	// Every log line passes through the current configuration's redactor:
	// a provider that echoes its key in an error cannot put it in the log.
	a.log = a.log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return secrets.Core(c, a.redactor)
	}))
	setup, err := a.buildSetup(cfg)
	if err != nil {
		return nil, err
	}
	a.cfg.Store(cfg)
	a.setup.Store(setup)
	a.keys.Store(auth.New(authOptions(cfg)))

	if a.history, err = openHistory(ctx, cfg); err != nil {
		return nil, err
	}
	if n, err := a.history.FailAbandoned(ctx, abandonedReason, a.abandonedBefore(cfg)); err != nil {
		_ = a.history.Close()
		return nil, fmt.Errorf("history: mark abandoned answers: %w", err)
	} else if n > 0 {
		a.log.Warn("answers left streaming by an earlier run were marked failed", zap.Int("count", n))
	}
	if a.knowledge, err = a.openKnowledge(ctx, cfg); err != nil {
		_ = a.history.Close()
		return nil, err
	}
	if err := a.openStreams(ctx, cfg); err != nil {
		_ = a.closeStores()
		return nil, err
	}
	cacheOpts, err := cacheOptions(cfg)
	if err == nil {
		a.cache, err = cache.Open(cacheOpts)
	}
	if err != nil {
		_ = a.closeStores()
		return nil, err
	}
	observers := opts.Observers
	if cfg.Metrics.Enabled {
		a.metrics = metrics.New()
		observers = append(observers, a.metrics.Observer())
		if mem, ok := a.localStreams.(*stream.Memory); ok {
			a.metrics.GaugeFunc("chatpipe_stream_store_streams", "Streams held in the in-memory stream store.",
				func() float64 { return float64(mem.Len()) })
		}
	}
	if a.tracing, err = telemetry.New(ctx, tracingOptions(cfg, a.log)); err != nil {
		_ = a.closeStores()
		return nil, err
	}
	traces, _ := a.history.(history.TraceStore)
	a.mcpClients = newMCPClients(a.log, a.metrics)
	a.mcpClients.Apply(mcpServers(cfg))
	a.jobs = jobs.New(cfg.Background.MaxJobs, a.log, a.countJob)
	a.runs = run.NewManager(run.Options{
		Tracer:    a.tracing.Tracer(),
		Traces:    traces,
		Setup:     a.setup.Load,
		History:   a.history,
		Knowledge: a.knowledge,
		Cache:     a.cache,
		Streams:   a.streams,
		Logger:    a.log,
		Observers: observers,
		Cluster:   a.cluster,

		RemoteTools: a.mcpClients,
		Jobs:        a.jobs,
	})
	close(a.started)
	a.hub = handler.NewHub(handler.HubOptions{
		Logger:       a.log,
		Metrics:      a.metrics,
		Heartbeat:    func() time.Duration { return a.cfg.Load().Stream.Heartbeat },
		WriteTimeout: func() time.Duration { return a.cfg.Load().Server.WriteTimeout },
	})
	a.handler = handler.New(handler.Deps{
		Hub:       a.hub,
		Metrics:   a.metrics,
		Auth:      a.keys.Load,
		Config:    a.cfg.Load,
		Modes:     a.modes,
		History:   a.history,
		Knowledge: a.knowledge,
		Streams:   a.streams,
		Runs:      a.runs,
		Logger:    a.log,
		Ready:     a.ready,
		MCP:       a.newMCPServer(),
		Tracer:    a.tracing.Tracer(),
		Traces:    traces,
	})
	if traces != nil {
		a.purge = startPurge(traces, a.cfg.Load, a.log)
	}
	if opts.ConfigPath != "" {
		if a.watcher, err = config.Watch(opts.ConfigPath, a.apply, a.log); err != nil {
			a.hub.Close()
			a.purge.stop()
			a.shutdownTracing()
			a.mcpClients.Close()
			a.closeStores()
			return nil, fmt.Errorf("watch %s: %w", opts.ConfigPath, err)
		}
	}
	return a, nil
}

const abandonedReason = "The server stopped before this answer was finished."

// abandonedBefore is the creation time before which a message still
// streaming can no longer be live. One server: anything from before this
// start. Replicas sharing a database: only what is older than the longest
// generation could run, so a starting replica never fails the answers
// another replica is generating.
func (a *App) abandonedBefore(cfg *config.Config) time.Time {
	if cfg.StreamStore == "redis" {
		return time.Now().Add(-cfg.Stream.MaxDuration - time.Minute)
	}
	return time.Now()
}

// NewLogger builds the zap logger described by cfg, with a level that a
// reload can change. Sampling is off: lifecycle lines must not be dropped.
func NewLogger(cfg config.Log) (*zap.Logger, *zap.AtomicLevel, error) {
	level, err := zap.ParseAtomicLevel(cfg.Level)
	if err != nil {
		return nil, nil, fmt.Errorf("log.level: %w", err)
	}
	zc := zap.NewProductionConfig()
	zc.Level = level
	zc.Sampling = nil
	zc.EncoderConfig = encoderConfig(cfg.Format == "console")
	if cfg.Format == "console" {
		zc.Encoding = "console"
	}
	log, err := zc.Build()
	if err != nil {
		return nil, nil, err
	}
	return log, &level, nil
}

// openHistory opens the history store storage.driver names (stores.go).
func openHistory(ctx context.Context, cfg *config.Config) (history.Store, error) {
	open, err := historyStores.Get(cfg.Storage.Driver)
	if err != nil {
		return nil, fmt.Errorf("storage.driver: %w", err)
	}
	return open(ctx, cfg)
}

// openKnowledge opens the knowledge base, loads the sample documents
// into it when there are none, and starts the background ingest (which
// resumes what a previous run left processing).
func (a *App) openKnowledge(ctx context.Context, cfg *config.Config) (*knowledge.Service, error) {
	svc, err := OpenKnowledge(ctx, cfg, a.log, a.opts.HTTPClient)
	if err != nil {
		return nil, err
	}
	if cfg.Knowledge.SampleDocs && a.opts.Samples != nil {
		n, err := svc.LoadSamples(ctx, a.opts.Samples)
		if err != nil {
			a.log.Warn("loading the sample documents failed", zap.Error(err))
		} else if n > 0 {
			a.log.Info("loaded the sample knowledge base", zap.Int("documents", n))
		}
	}
	svc.StartBackground()
	return svc, nil
}

// OpenKnowledge opens the knowledge base as the server does: its store
// (in the history database: the SQLite file or PostgreSQL) and the
// embedder when one is configured. It neither loads samples nor starts
// the background ingest: a command that only adds documents (chatpipe
// ingest) must not take over the processing documents of a running
// server. httpClient nil is http.DefaultClient's transport.
func OpenKnowledge(ctx context.Context, cfg *config.Config, logger *zap.Logger, httpClient *http.Client) (*knowledge.Service, error) {
	openStore, err := knowledgeStores.Get(cfg.Storage.Driver)
	if err != nil {
		return nil, fmt.Errorf("storage.driver: %w", err)
	}
	store, err := openStore(ctx, cfg, logger)
	if err != nil {
		return nil, fmt.Errorf("knowledge: %w", err)
	}
	emb, err := knowledge.NewEmbedderWithClient(EmbeddingOptions(cfg), httpClient)
	if err != nil {
		_ = store.Close()
		return nil, fmt.Errorf("knowledge.embedding: %w", err)
	}
	opts, err := KnowledgeOptions(cfg)
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	return knowledge.NewService(store, emb, opts, logger), nil
}

// openStreams opens the stream store stream_store names (stores.go) over
// this process's memory store, which holds the streams it generates.
func (a *App) openStreams(ctx context.Context, cfg *config.Config) error {
	open, err := streamStores.Get(cfg.StreamStore)
	if err != nil {
		return fmt.Errorf("stream_store: %w", err)
	}
	a.localStreams = stream.NewMemory(stream.MemoryOptions{
		MaxEvents:     cfg.Stream.MaxEvents,
		MaxBytes:      cfg.Stream.MaxBytes,
		MaxTotalBytes: cfg.Stream.MemoryMaxBytes,
		Retention:     cfg.Stream.Retention,
	})
	if a.streams, err = open(a, ctx, cfg); err != nil {
		_ = a.localStreams.Close()
		return err
	}
	return nil
}

// modelUser is implemented by plugins that call a named model, so a
// missing model is caught when the config loads, not on the first request.
type modelUser interface{ ModelName() string }

// buildSetup builds the models and every mode's chain of cfg.
func (a *App) buildSetup(cfg *config.Config) (*run.Setup, error) {
	models, err := llm.NewRegistry(ModelOptions(cfg.Models), llm.RegistryOptions{HTTPClient: a.opts.HTTPClient})
	if err != nil {
		return nil, err
	}
	chains, err := cfg.Chains()
	if err != nil {
		return nil, err
	}
	setup := &run.Setup{
		Chains:      make(map[string]*pipeline.EventManager, len(chains)),
		DefaultMode: cfg.DefaultMode,
		Models:      models,
		MaxDuration: cfg.Stream.MaxDuration,
		Redact:      secrets.New(cfg.Secrets()...),
		PartialSaves: run.PartialSaves{
			EveryDeltas: cfg.Stream.PartialSaveDeltas,
			Interval:    cfg.Stream.PartialSaveInterval,
		},
		Inspector: run.InspectorSetup{
			Enabled:       cfg.Telemetry.Inspector.Enabled,
			MaxBytes:      cfg.Telemetry.Inspector.MaxBytes,
			DisabledModes: cfg.Telemetry.Inspector.DisabledModes,
		},
		CaptureContent: cfg.Telemetry.CaptureContent,
		Titles:         titles(cfg),
		JobsWait:       cfg.Background.StreamWait,
	}
	for _, mode := range slices.Sorted(maps.Keys(chains)) { // sorted: the same error first on every start
		entries := chains[mode]
		chain := make([]pipeline.ChainEntry, len(entries))
		for i, e := range entries {
			chain[i] = pipeline.ChainEntry{Name: e.Name, Overrides: e.Overrides}
		}
		// The models and the search settings shape answers too: they are
		// part of the chain's fingerprint, which response_cache keys on.
		m, err := pipeline.Build(mode, chain, cfg.Plugins, fmt.Sprint(cfg.Models), fmt.Sprint(cfg.Knowledge.Search))
		if err != nil {
			return nil, withSource(cfg, err)
		}
		for _, p := range m.PluginInstances() {
			if mu, ok := p.(modelUser); ok {
				if _, err := models.ChatModel(mu.ModelName()); err != nil {
					return nil, fmt.Errorf("pipelines.%s: plugin %s uses model %q, which is not defined under models",
						mode, p.Name(), mu.ModelName())
				}
			}
		}
		if err := checkRemoteTools(cfg, mode, m); err != nil {
			return nil, err
		}
		setup.Chains[mode] = m
	}
	return setup, nil
}

// apply is the hot-reload callback: build the new snapshot completely,
// then swap it in; on any error the old one stays (the watcher logs it).
// Runs already streaming keep the setup they started with.
func (a *App) apply(cfg *config.Config) error {
	setup, err := a.buildSetup(cfg)
	if err != nil {
		return err
	}
	knowledgeOpts, err := KnowledgeOptions(cfg)
	if err != nil {
		return err
	}
	old := a.cfg.Load()
	for _, key := range restartOnly(old, cfg) {
		a.log.Warn("config change needs a restart to take effect", zap.String("key", key))
	}
	if a.level != nil {
		if lvl, err := zapcore.ParseLevel(cfg.Log.Level); err == nil {
			a.level.SetLevel(lvl)
		}
	}
	a.cfg.Store(cfg)
	a.setup.Store(setup)
	a.keys.Store(auth.New(authOptions(cfg)))
	a.knowledge.Reconfigure(knowledgeOpts)
	a.mcpClients.Apply(mcpServers(cfg))
	a.log.Info("configuration reloaded", zap.Strings("modes", a.modes()))
	return nil
}

// restartOnly lists the changed keys that are read only at start.
func restartOnly(old, cfg *config.Config) []string {
	var keys []string
	if !reflect.DeepEqual(old.Server, cfg.Server) {
		keys = append(keys, "server")
	}
	if old.Storage != cfg.Storage {
		keys = append(keys, "storage")
	}
	if old.Knowledge.Embedding != cfg.Knowledge.Embedding {
		keys = append(keys, "knowledge.embedding")
	}
	if o, n := old.Knowledge.Ingest, cfg.Knowledge.Ingest; o.Workers != n.Workers || o.Queue != n.Queue ||
		o.StaleAfter != n.StaleAfter || o.MaxAttempts != n.MaxAttempts {
		keys = append(keys, "knowledge.ingest")
	}
	if old.StreamStore != cfg.StreamStore {
		keys = append(keys, "stream_store")
	}
	if old.Stream.MaxEvents != cfg.Stream.MaxEvents || old.Stream.MaxBytes != cfg.Stream.MaxBytes ||
		old.Stream.Retention != cfg.Stream.Retention || old.Stream.MemoryMaxBytes != cfg.Stream.MemoryMaxBytes {
		keys = append(keys, "stream.max_events/max_bytes/retention/memory_max_bytes")
	}
	if old.Log.Format != cfg.Log.Format {
		keys = append(keys, "log.format")
	}
	if !reflect.DeepEqual(old.Telemetry.Traces, cfg.Telemetry.Traces) {
		keys = append(keys, "telemetry.traces")
	}
	return keys
}

// redactor is the current configuration's secret redactor (nil before
// the first setup is built).
func (a *App) redactor() *secrets.Redactor {
	if s := a.setup.Load(); s != nil {
		return s.Redact
	}
	return nil
}

func (a *App) modes() []string {
	setup := a.setup.Load()
	out := make([]string, 0, len(setup.Chains))
	for m := range setup.Chains {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

func (a *App) ready(ctx context.Context) error {
	if a.closing.Load() {
		return errors.New("shutting down")
	}
	return a.history.Ping(ctx)
}

// Handler is the HTTP API.
func (a *App) Handler() http.Handler { return a.handler }

// Hub writes the live SSE readers of sessions' answers (tests look at it).
func (a *App) Hub() *handler.Hub { return a.hub }

// Runs is the run manager (tests and metrics look at it).
func (a *App) Runs() *run.Manager { return a.runs }

// Config is the current configuration snapshot.
func (a *App) Config() *config.Config { return a.cfg.Load() }

// Logger is the app's logger.
func (a *App) Logger() *zap.Logger { return a.log }

// Serve listens on the configured address and serves until ctx ends, then
// shuts down gracefully (see Shutdown).
func (a *App) Serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.Load().Server.Addr)
	if err != nil {
		return fmt.Errorf("server.addr: %w", err)
	}
	return a.ServeListener(ctx, ln)
}

// ServeListener is Serve on a listener the caller opened (tests use port 0).
func (a *App) ServeListener(ctx context.Context, ln net.Listener) error {
	cfg := a.cfg.Load()
	srv := &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout,
		WriteTimeout:      cfg.Server.WriteTimeout, // SSE writers renew it per write
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          zap.NewStdLog(a.log.Named("http")),
	}
	a.log.Info("chatpipe listening", zap.String("addr", ln.Addr().String()), zap.String("config", configSource(cfg)))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.log.Info("shutting down", zap.Duration("grace", cfg.Server.ShutdownGrace))
	a.closing.Store(true)
	grace, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownGrace)
	defer cancel()
	// Stop accepting; readers of live streams keep their connections until
	// their streams end, which Shutdown of the runs guarantees.
	httpDone := make(chan error, 1)
	go func() {
		hctx, hcancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownGrace+5*time.Second)
		defer hcancel()
		httpDone <- srv.Shutdown(hctx)
	}()
	a.runs.Shutdown(grace)
	// Every answer has ended (the grace may be used up by now): the
	// readers the hub serves get their last frames, as the handlers
	// srv.Shutdown waits for get the same 5 s past the grace.
	drain, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	a.hub.Drain(drain)
	dcancel()
	a.jobs.Close(grace) // titles and summaries still being written get what is left of the grace
	if err := <-httpDone; err != nil {
		_ = srv.Close()
	}
	<-errc
	return a.Close()
}

func configSource(cfg *config.Config) string {
	if cfg.File == "" {
		return "built-in defaults"
	}
	if abs, err := filepath.Abs(cfg.File); err == nil {
		return abs
	}
	return cfg.File
}

// Close stops the watcher, ends live runs (saved as stopped) and closes
// the stores. It is safe to call once after Serve or instead of it.
func (a *App) Close() error {
	a.closing.Store(true)
	if a.watcher != nil {
		_ = a.watcher.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace left: stop whatever still runs
	a.runs.Shutdown(ctx)
	a.hub.Close()        // after the runs: every stream has ended, its last frames written or cut
	a.jobs.Close(ctx)    // after the runs: none can start a job any more
	a.mcpClients.Close() // after the runs: none can call a tool any more
	a.purge.stop()
	a.shutdownTracing() // after the runs: their last spans are exported
	if a.cluster != nil {
		_ = a.cluster.Close() // before the stores: it uses the Redis client
	}
	return a.closeStores()
}

func (a *App) closeStores() error {
	var errs []error
	if a.streams != nil {
		errs = append(errs, a.streams.Close())
	}
	if a.cache != nil {
		errs = append(errs, a.cache.Close())
	}
	if a.knowledge != nil {
		errs = append(errs, a.knowledge.Close())
	}
	errs = append(errs, a.history.Close())
	_ = a.log.Sync()
	return errors.Join(errs...)
}

// titles maps titles: onto the run's settings: model "" is the model
// named default when there is one.
func titles(cfg *config.Config) run.Titles {
	t := run.Titles{Enabled: cfg.Titles.Enabled, Model: cfg.Titles.Model, Prompt: cfg.Titles.Prompt,
		MaxChars: cfg.Titles.MaxChars, Timeout: cfg.Titles.Timeout}
	if _, ok := cfg.Models["default"]; ok && t.Model == "" {
		t.Model = "default"
	}
	return t
}

// countJob counts how a background job ended, when metrics are on.
func (a *App) countJob(kind, outcome string) {
	if a.metrics != nil {
		a.metrics.Job(kind, outcome)
	}
}
