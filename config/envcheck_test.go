package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
)

// A CHATPIPE_* variable that sets no key is refused at start, naming the
// closest variable that would; one that names a section says which.
func TestUnknownEnvironmentVariablesAreRefused(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want []string // all in the error; nil = loads
	}{
		{"misspelled key", map[string]string{"CHATPIPE_SERVR_ADDR": ":1"},
			[]string{"CHATPIPE_SERVR_ADDR: no config key reads this variable (did you mean CHATPIPE_SERVER_ADDR?)"}},
		{"section", map[string]string{"CHATPIPE_STORAGE": "postgres"},
			[]string{`CHATPIPE_STORAGE names the section "storage", which it would overwrite as a whole`, "CHATPIPE_STORAGE_DRIVER"}},
		{"misspelled plugin key", map[string]string{"CHATPIPE_PLUGINS_LOAD_HISTORY_MAX_ROUNDZ": "3"},
			[]string{"did you mean CHATPIPE_PLUGINS_LOAD_HISTORY_MAX_ROUNDS?"}},
		{"model field of no model", map[string]string{"CHATPIPE_MODELS_NOPE_BASE_URL": "http://x"},
			[]string{"CHATPIPE_MODELS_NOPE_BASE_URL: no config key reads this variable"}},
		{"nothing near", map[string]string{"CHATPIPE_ZZZZZZZZZZZZZZZZZZZZZZ": "1"},
			[]string{"CHATPIPE_ZZZZZZZZZZZZZZZZZZZZZZ: no config key reads this variable"}},
		{"valid keys load", map[string]string{"CHATPIPE_SERVER_ADDR": ":1", "CHATPIPE_MODELS_DEFAULT_API_KEY": "k",
			"CHATPIPE_MODELS_QWEN_PROVIDER": "openai", "CHATPIPE_MODELS_QWEN_BASE_URL": "http://q",
			"CHATPIPE_PIPELINES_CHAT": "chat_completion_stream", "CHATPIPE_PLUGINS_SEARCH_TOP_K": "4",
			"CHATPIPE_AUTH_KEYS": "t:0123456789abcdef", "CHATPIPE_TEST_WHATEVER": "tests' own"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			_, err := Load(writeConfig(t, "server:\n  addr: \":8080\"\n"))
			if c.want == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			var envErr *EnvError
			if !errors.As(err, &envErr) {
				t.Fatalf("Load = %v, want an EnvError", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "config.yaml") {
				t.Errorf("error %q blames the file for the environment", err)
			}
		})
	}
}

// Hot reload applies the same check: a file that drops the model a
// variable configures is refused, naming the variable.
func TestReloadRefusesAVariableTheNewFileLeavesUnread(t *testing.T) {
	t.Setenv("CHATPIPE_MODELS_GPT_API_KEY", "sk-test")
	withGPT := func(addr string) string {
		return configWithAddr(addr) + "models:\n  gpt:\n    provider: openai\n    model: m\n    base_url: http://127.0.0.1:1/v1\n"
	}
	f := startWatch(t, writeConfig(t, withGPT(":8081")), nil)
	f.write(t, configWithAddr(":8082"))
	e := f.nextLog(t, zapcore.WarnLevel)
	if got := fmt.Sprint(e.ContextMap()["error"]); !strings.Contains(got, "CHATPIPE_MODELS_GPT_API_KEY") {
		t.Errorf("reload warning %q does not name the variable", got)
	}
	f.write(t, withGPT(":8083"))
	if c := f.nextChange(t); c.Server.Addr != ":8083" {
		t.Fatalf("server.addr = %q", c.Server.Addr)
	}
}
