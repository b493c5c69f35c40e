package app

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/config"
)

// optionsOwners are the service packages (with the packages under them)
// that own their options: the app maps config onto them, and they never
// read a config.* struct themselves.
var optionsOwners = []string{
	"internal/auth",
	"internal/cache",
	"internal/knowledge",
	"internal/llm",
	"internal/mcpclient",
	"internal/mcpserver",
	"internal/stream/redisstore",
}

func TestServicePackagesDoNotImportConfig(t *testing.T) {
	t.Parallel()
	const configPkg = "github.com/chatpipe/chatpipe/config"
	fset := token.NewFileSet()
	for _, dir := range optionsOwners {
		files := 0
		err := filepath.WalkDir(filepath.Join("..", "..", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			files++
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == configPkg {
					t.Errorf("%s imports %s: take an Options of the package's own and map config onto it in internal/app/options.go", path, configPkg)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if files == 0 {
			t.Errorf("%s: no Go files found; is the list of packages out of date?", dir)
		}
	}
}

func TestResponseCacheBudgetNamesTheKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    any
		want int64
	}{
		{"absent", nil, 0},
		{"number", 2048, 2048},
		{"string from an environment variable", "4096", 4096},
		{"zero is the store's default", 0, 0},
	} {
		sections := map[string]map[string]any{}
		if tc.v != nil {
			sections["response_cache"] = map[string]any{"max_bytes": tc.v}
		}
		if got, err := responseCacheBudget(sections); err != nil || got != tc.want {
			t.Errorf("%s: budget = %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []any{"lots", -1} {
		_, err := responseCacheBudget(map[string]map[string]any{"response_cache": {"max_bytes": bad}})
		if err == nil || !strings.Contains(err.Error(), "plugins.response_cache.max_bytes") {
			t.Errorf("max_bytes %v: %v", bad, err)
		}
	}
}

func TestCacheOptionsFollowTheStreamStore(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Redis.Addr, cfg.Redis.KeyPrefix = "redis:6379", "cp:"
	opts, err := cacheOptions(cfg)
	if err != nil || opts.Store != "memory" {
		t.Fatalf("stream_store %s: %+v, %v; want memory", cfg.StreamStore, opts, err)
	}
	cfg.StreamStore = "redis"
	if opts, err = cacheOptions(cfg); err != nil || opts.Store != "redis" || opts.Redis.Addr != "redis:6379" || opts.Redis.KeyPrefix != "cp:" {
		t.Fatalf("stream_store redis: %+v, %v; want Redis at redis:6379 under cp:", opts, err)
	}
}

func TestRerankMinKeepIsReadAsTheRerankPluginReadsIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    any
		want int
	}{
		{"absent", nil, defaultRerankMinKeep},
		{"number", 4, 4},
		{"string from an environment variable", "3", 3},
		{"zero", 0, 0},
		{"not a number", "many", defaultRerankMinKeep},
	} {
		sections := map[string]map[string]any{"rerank": {}}
		if tc.v != nil {
			sections["rerank"]["min_keep"] = tc.v
		}
		if got := rerankMinKeep(sections); got != tc.want {
			t.Errorf("%s: min_keep = %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := rerankMinKeep(config.Default().Plugins); got != defaultRerankMinKeep {
		t.Errorf("the default config's min_keep = %d, want %d", got, defaultRerankMinKeep)
	}
}

func TestMCPServerSettingsAreMappedOncePerSnapshot(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	current := cfg
	settings := mcpServerSettings(func() *config.Config { return current })
	first := settings()
	if first != settings() {
		t.Fatal("one snapshot mapped twice: the endpoint would rebuild its servers on every request")
	}
	if first.MaxResultChars != cfg.MCP.Server.MaxResultChars || first.MaxQuestionChars != cfg.Limits.MaxQuestionChars {
		t.Errorf("settings = %+v", first)
	}
	next := *cfg
	next.MCP.Server.ReadOnly = true
	current = &next
	if s := settings(); s == first || !s.ReadOnly {
		t.Errorf("a new snapshot: %+v (same pointer %v)", s, s == first)
	}
}
