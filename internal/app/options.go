package app

import (
	"fmt"
	"io"
	"os"
	"sync"
	"unicode/utf8"

	"github.com/go-viper/mapstructure/v2"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/auth"
	"github.com/chatpipe/chatpipe/internal/cache"
	"github.com/chatpipe/chatpipe/internal/knowledge"
	"github.com/chatpipe/chatpipe/internal/knowledge/synonyms"
	"github.com/chatpipe/chatpipe/internal/llm"
	"github.com/chatpipe/chatpipe/internal/mcpclient"
	"github.com/chatpipe/chatpipe/internal/mcpserver"
	"github.com/chatpipe/chatpipe/internal/stream/redisstore"
)

// The services own their options; this file is the one place that maps a
// validated configuration snapshot onto them. Keys the services name in
// their errors (models.<name>.base_url, redis.addr…) are config.yaml's.

// authOptions maps auth.keys.
func authOptions(cfg *config.Config) auth.Options {
	keys := make([]auth.Key, len(cfg.Auth.Keys))
	for i, k := range cfg.Auth.Keys {
		keys[i] = auth.Key{Tenant: k.Tenant, Key: k.Key, KeySHA256: k.KeySHA256, ManageShared: k.ManageShared}
	}
	return auth.Options{Keys: keys}
}

// ModelOptions maps the models section onto the chat model registry's
// entries.
func ModelOptions(models map[string]config.Model) map[string]llm.ModelOptions {
	out := make(map[string]llm.ModelOptions, len(models))
	for name, m := range models {
		out[name] = llm.ModelOptions{
			Provider:       m.Provider,
			BaseURL:        m.BaseURL,
			Model:          m.Model,
			APIKey:         m.APIKey,
			Temperature:    m.Temperature,
			MaxTokens:      m.MaxTokens,
			Retries:        m.Retries,
			Timeout:        m.Timeout,
			Client:         m.Client,
			Thinking:       m.Thinking,
			ChunkDelay:     m.ChunkDelay,
			StreamAttempts: m.StreamRetry.Attempts,
		}
	}
	return out
}

// KnowledgeOptions maps the knowledge section onto the knowledge
// service's options (all but the embedder's, EmbeddingOptions); it reads
// knowledge.search.synonyms_file, whose errors it returns.
func KnowledgeOptions(cfg *config.Config) (knowledge.Options, error) {
	k := cfg.Knowledge
	groups, err := synonymGroups(k.Search)
	if err != nil {
		return knowledge.Options{}, err
	}
	return knowledge.Options{
		MaxUploadBytes: k.MaxUploadBytes,
		MaxFileBytes:   k.MaxFileBytes,
		Chunking:       knowledge.Chunker{TargetTokens: k.Chunking.TargetTokens, OverlapTokens: k.Chunking.OverlapTokens},
		EmbedBatchSize: k.Embedding.BatchSize,
		Search: knowledge.SearchOptions{TopK: k.Search.TopK, KeywordWeight: k.Search.KeywordWeight,
			VectorWeight: k.Search.VectorWeight, RRFK: k.Search.RRFK, LeadWeight: k.Search.LeadWeight,
			NameWeight: k.Search.NameWeight, Synonyms: groups, SynonymWeight: k.Search.SynonymWeight},
		Ingest: knowledge.IngestOptions{Workers: k.Ingest.Workers, Queue: k.Ingest.Queue,
			StaleAfter: k.Ingest.StaleAfter, MaxAttempts: k.Ingest.MaxAttempts},
	}, nil
}

// maxSynonymsFileBytes bounds knowledge.search.synonyms_file: groups are
// held in memory and matched against every question.
const maxSynonymsFileBytes = 4 << 20

// synonymGroups compiles the built-in synonym groups (when
// builtin_synonyms) and those of synonyms_file; nil when there are none
// or synonym_weight is 0. The file is checked even then: a weight turned
// to 0 for a while must not hide a broken file until it is turned back.
func synonymGroups(s config.Search) (*knowledge.SynonymGroups, error) {
	var groups []synonyms.Group
	if s.BuiltinSynonyms && s.SynonymWeight > 0 {
		groups = append(groups, synonyms.Builtin()...)
	}
	if s.SynonymsFile != "" {
		own, err := readSynonymsFile(s.SynonymsFile)
		if err != nil {
			return nil, err
		}
		groups = append(groups, own...)
	}
	if len(groups) == 0 {
		return nil, nil
	}
	g, err := knowledge.NewSynonymGroups(groups)
	if err != nil {
		// The built-in groups compile (a test holds it): the error is the
		// file's, and names its line.
		return nil, fmt.Errorf("knowledge.search.synonyms_file: %s: %w", s.SynonymsFile, err)
	}
	if s.SynonymWeight == 0 {
		return nil, nil
	}
	return g, nil
}

// readSynonymsFile reads and parses an operator's synonym groups.
func readSynonymsFile(path string) ([]synonyms.Group, error) {
	// Stat first: opening a FIFO or a device could block or never end.
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("knowledge.search.synonyms_file: %w", err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("knowledge.search.synonyms_file: %s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("knowledge.search.synonyms_file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSynonymsFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("knowledge.search.synonyms_file: %w", err)
	}
	if len(data) > maxSynonymsFileBytes {
		return nil, fmt.Errorf("knowledge.search.synonyms_file: %s is larger than %d MB", path, maxSynonymsFileBytes>>20)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("knowledge.search.synonyms_file: %s is not UTF-8 text", path)
	}
	groups, err := synonyms.ParseGroups(string(data))
	if err != nil {
		return nil, fmt.Errorf("knowledge.search.synonyms_file: %s: %w", path, err)
	}
	return groups, nil
}

// EmbeddingOptions maps knowledge.embedding onto the embedder's options.
func EmbeddingOptions(cfg *config.Config) knowledge.EmbeddingOptions {
	e := cfg.Knowledge.Embedding
	return knowledge.EmbeddingOptions{Provider: e.Provider, BaseURL: e.BaseURL, Model: e.Model, APIKey: e.APIKey,
		Dimensions: e.Dimensions, Timeout: e.Timeout}
}

// redisOptions maps the redis section onto the stream store's server and
// keys.
func redisOptions(cfg *config.Config) redisstore.RedisOptions {
	r := cfg.Redis
	return redisstore.RedisOptions{Addr: r.Addr, Password: r.Password, DB: r.DB, KeyPrefix: r.KeyPrefix,
		LiveTTL: r.LiveTTL, FinishedTTL: r.FinishedTTL, QueueSize: r.QueueSize}
}

// cacheOptions chooses response_cache's store: Redis when replicas share
// streams (stream_store: redis), so that they share answers too; memory
// otherwise, with the budget plugins.response_cache.max_bytes. The store
// is opened at start only.
func cacheOptions(cfg *config.Config) (cache.Options, error) {
	budget, err := responseCacheBudget(cfg.Plugins)
	if err != nil {
		return cache.Options{}, err
	}
	r := cfg.Redis
	return cache.Options{
		Store:    cfg.StreamStore,
		Redis:    cache.RedisOptions{Addr: r.Addr, Password: r.Password, DB: r.DB, KeyPrefix: r.KeyPrefix},
		MaxBytes: budget,
	}, nil
}

// responseCacheBudget reads plugins.response_cache.max_bytes, the memory
// store's budget shared by every mode; 0 (or no key) is the store's
// default.
func responseCacheBudget(sections map[string]map[string]any) (int64, error) {
	v, ok := sections["response_cache"]["max_bytes"]
	if !ok || v == nil {
		return 0, nil
	}
	var n int64
	if err := mapstructure.WeakDecode(v, &n); err != nil || n < 0 {
		return 0, fmt.Errorf("plugins.response_cache.max_bytes: want a number of bytes, 0 or more, got %v", v)
	}
	return n, nil
}

// mcpServers maps mcp.servers onto the client manager's servers.
func mcpServers(cfg *config.Config) []mcpclient.Server {
	out := make([]mcpclient.Server, len(cfg.MCP.Servers))
	for i, s := range cfg.MCP.Servers {
		out[i] = mcpclient.Server{Name: s.Name, Transport: s.Transport, Command: s.Command, Args: s.Args, Env: s.Env,
			URL: s.URL, Headers: s.Headers, Tools: s.Tools, RequireApproval: s.RequireApproval, Timeout: s.Timeout,
			ToolTimeouts: s.ToolTimeouts, ConnectTimeout: s.ConnectTimeout, MaxResultChars: s.MaxResultChars}
	}
	return out
}

// mcpServerSettings returns the /mcp endpoint's settings of the current
// snapshot, mapped once per snapshot: the endpoint rebuilds its servers
// when the pointer changes, so a reload applies to the next request.
func mcpServerSettings(current func() *config.Config) func() *mcpserver.Settings {
	var (
		mu   sync.Mutex
		from *config.Config
		s    *mcpserver.Settings
	)
	return func() *mcpserver.Settings {
		cfg := current()
		mu.Lock()
		defer mu.Unlock()
		if cfg != from {
			from, s = cfg, &mcpserver.Settings{
				ReadOnly:         cfg.MCP.Server.ReadOnly,
				MaxResultChars:   cfg.MCP.Server.MaxResultChars,
				MaxQuestionChars: cfg.Limits.MaxQuestionChars,
				Plugins:          cfg.Plugins,
				RerankMinKeep:    rerankMinKeep(cfg.Plugins),
			}
		}
		return s
	}
}

// defaultRerankMinKeep is plugins.rerank.min_keep's default.
const defaultRerankMinKeep = 2

// rerankMinKeep reads plugins.rerank.min_keep, which the /mcp search keeps
// as the chat modes' rerank does; a section that does not give a number
// (the rerank plugin reports it where a mode uses it) is the default.
func rerankMinKeep(sections map[string]map[string]any) int {
	v, ok := sections["rerank"]["min_keep"]
	if !ok || v == nil {
		return defaultRerankMinKeep
	}
	var n int
	if err := mapstructure.WeakDecode(v, &n); err != nil || n < 0 {
		return defaultRerankMinKeep
	}
	return n
}
