package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// waitFor bounds every wait on the watcher: generous, since inotify and a
// loaded CI machine can be slow; a passing run never waits this long.
const waitFor = 10 * time.Second

// entryCore is a zap core that hands every log entry to a channel, so a
// test can wait for "the watcher has logged its verdict" instead of sleeping.
type entryCore struct {
	zapcore.LevelEnabler
	fields  []zapcore.Field
	entries chan observer.LoggedEntry
}

func (c *entryCore) With(fields []zapcore.Field) zapcore.Core {
	return &entryCore{c.LevelEnabler, append(c.fields[:len(c.fields):len(c.fields)], fields...), c.entries}
}

func (c *entryCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *entryCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	all := append(c.fields[:len(c.fields):len(c.fields)], fields...)
	c.entries <- observer.LoggedEntry{Entry: e, Context: all}
	return nil
}

func (c *entryCore) Sync() error { return nil }

// watchFixture is a watched config file and what the watcher reports.
type watchFixture struct {
	path    string
	changes chan *Config              // every config onChange was given
	logs    chan observer.LoggedEntry // every log entry at info or above
	reject  func(*Config) error       // onChange's verdict; nil accepts
	holder  *Holder                   // what the app would publish
	w       *Watcher
}

func startWatch(t *testing.T, path string, reject func(*Config) error) *watchFixture {
	t.Helper()
	f := &watchFixture{
		path:    path,
		changes: make(chan *Config, 100),
		logs:    make(chan observer.LoggedEntry, 1000),
		reject:  reject,
	}
	if initial, err := Load(path); err == nil {
		f.holder = NewHolder(initial)
	} else {
		f.holder = NewHolder(Default())
	}
	logger := zap.New(&entryCore{LevelEnabler: zapcore.InfoLevel, entries: f.logs})
	w, err := Watch(path, func(c *Config) error {
		f.changes <- c
		if f.reject != nil {
			if err := f.reject(c); err != nil {
				return err
			}
		}
		f.holder.Store(c)
		return nil
	}, logger)
	if err != nil {
		t.Fatal(err)
	}
	f.w = w
	t.Cleanup(func() { _ = w.Close() })
	return f
}

func (f *watchFixture) write(t *testing.T, content string) {
	t.Helper()
	if err := os.WriteFile(f.path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// nextChange waits for onChange to be called.
func (f *watchFixture) nextChange(t *testing.T) *Config {
	t.Helper()
	select {
	case c := <-f.changes:
		return c
	case <-time.After(waitFor):
		t.Fatal("onChange was not called")
		return nil
	}
}

// nextLog waits for the next entry at level and returns it, failing on
// any onChange call in between.
func (f *watchFixture) nextLog(t *testing.T, level zapcore.Level) observer.LoggedEntry {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case e := <-f.logs:
			if e.Level == level {
				return e
			}
		case c := <-f.changes:
			t.Fatalf("onChange called with %v while waiting for a %s log", c, level)
		case <-deadline:
			t.Fatalf("no %s log", level)
		}
	}
}

func configWithAddr(addr string) string {
	return fmt.Sprintf("server:\n  addr: %q\nauth:\n  allow_open: true\n", addr)
}

func TestWatchAppliesEachValidChangeOnce(t *testing.T) {
	t.Parallel()
	f := startWatch(t, writeConfig(t, configWithAddr(":8081")), nil)

	f.write(t, configWithAddr(":8082"))
	if c := f.nextChange(t); c.Server.Addr != ":8082" {
		t.Fatalf("onChange got server.addr %q, want :8082", c.Server.Addr)
	}
	if e := f.nextLog(t, zapcore.InfoLevel); fmt.Sprint(e.ContextMap()["changed"]) != "[server.addr]" {
		t.Errorf("logged %q with changed = %v, want [server.addr]", e.Message, e.ContextMap()["changed"])
	}

	// The next call carries the next change: the first save was not
	// delivered twice.
	f.write(t, configWithAddr(":8083"))
	if c := f.nextChange(t); c.Server.Addr != ":8083" {
		t.Fatalf("onChange got server.addr %q, want :8083", c.Server.Addr)
	}
	if err := f.w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.changes); n != 0 {
		t.Errorf("onChange called %d more times", n)
	}
	if got := f.holder.Load().Server.Addr; got != ":8083" {
		t.Errorf("holder has %q", got)
	}
}

func TestWatchKeepsTheOldConfigWhenTheNewOneIsBad(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, content, wantInLog string
	}{
		{"empty file", "", "is empty"},
		{"unknown key", "server:\n  adress: :9000\n", "server.adress: unknown key"},
		{"invalid value", "log:\n  level: loud\n", "log.level"},
		{"bad duration", "stream:\n  heartbeat: often\n", "stream.heartbeat"},
		{"yaml syntax", "server: [\n", "config.yaml"},
		{"dangling default mode", "default_mode: poetry\n", "default_mode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := startWatch(t, writeConfig(t, configWithAddr(":8081")), nil)

			f.write(t, tc.content)
			e := f.nextLog(t, zapcore.WarnLevel)
			if got := fmt.Sprint(e.ContextMap()["error"]); !strings.Contains(got, tc.wantInLog) {
				t.Errorf("warning %q: error %q does not mention %q", e.Message, got, tc.wantInLog)
			}
			if got := f.holder.Load().Server.Addr; got != ":8081" {
				t.Errorf("a bad file replaced the config: server.addr = %q", got)
			}

			f.write(t, configWithAddr(":8084"))
			if c := f.nextChange(t); c.Server.Addr != ":8084" {
				t.Fatalf("onChange got server.addr %q, want :8084", c.Server.Addr)
			}
		})
	}
}

func TestWatchKeepsTheOldConfigWhenOnChangeRejects(t *testing.T) {
	t.Parallel()
	errNoDebug := errors.New("plugins.search: debug mode needs an index")
	f := startWatch(t, writeConfig(t, configWithAddr(":8081")), func(c *Config) error {
		if c.Log.Level == "debug" {
			return errNoDebug
		}
		return nil
	})

	f.write(t, "log: {level: debug}\n")
	f.nextChange(t)
	e := f.nextLog(t, zapcore.WarnLevel)
	if got := fmt.Sprint(e.ContextMap()["error"]); got != errNoDebug.Error() {
		t.Errorf("logged error %q, want %q", got, errNoDebug)
	}
	if got := f.holder.Load().Log.Level; got != "info" {
		t.Errorf("rejected config was kept: log.level = %q", got)
	}

	f.write(t, "log: {level: warn}\n")
	if c := f.nextChange(t); c.Log.Level != "warn" {
		t.Fatalf("onChange got log.level %q, want warn", c.Log.Level)
	}
}

func TestWatchSurvivesAPanickingOnChange(t *testing.T) {
	t.Parallel()
	f := startWatch(t, writeConfig(t, configWithAddr(":8081")), func(c *Config) error {
		if c.Server.Addr == ":6666" {
			panic("boom")
		}
		return nil
	})
	f.write(t, configWithAddr(":6666"))
	f.nextChange(t)
	f.nextLog(t, zapcore.ErrorLevel)
	f.write(t, configWithAddr(":8085"))
	if c := f.nextChange(t); c.Server.Addr != ":8085" {
		t.Fatalf("onChange got %q after a panic, want :8085", c.Server.Addr)
	}
}

func TestWatchSeesAnAtomicRenameSave(t *testing.T) {
	t.Parallel()
	f := startWatch(t, writeConfig(t, configWithAddr(":8081")), nil)
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(configWithAddr(":8086")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		t.Fatal(err)
	}
	if c := f.nextChange(t); c.Server.Addr != ":8086" {
		t.Fatalf("onChange got %q, want :8086", c.Server.Addr)
	}
}

func TestWatchKeepsTheConfigWhileTheFileIsGoneAndAppliesItsReturn(t *testing.T) {
	t.Parallel()
	f := startWatch(t, writeConfig(t, configWithAddr(":8081")), nil)
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
	if e := f.nextLog(t, zapcore.WarnLevel); !strings.Contains(e.Message, "gone") {
		t.Errorf("warning %q", e.Message)
	}
	f.write(t, configWithAddr(":8087"))
	if c := f.nextChange(t); c.Server.Addr != ":8087" {
		t.Fatalf("onChange got %q, want :8087", c.Server.Addr)
	}
}

// Kubernetes mounts a ConfigMap as config.yaml -> ..data/config.yaml with
// ..data -> ..<timestamp>, and updates it by swapping the ..data link.
func TestWatchFollowsAKubernetesSymlinkSwap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeVersion := func(name, content string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "config.yaml"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeVersion("..v1", configWithAddr(":8081"))
	if err := os.Symlink("..v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.Symlink(filepath.Join("..data", "config.yaml"), path); err != nil {
		t.Fatal(err)
	}
	f := startWatch(t, path, nil)

	writeVersion("..v2", configWithAddr(":8088"))
	if err := os.Symlink("..v2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if c := f.nextChange(t); c.Server.Addr != ":8088" {
		t.Fatalf("onChange got %q, want :8088", c.Server.Addr)
	}

	// Kubernetes then deletes the old version; nothing changes.
	if err := os.RemoveAll(filepath.Join(dir, "..v1")); err != nil {
		t.Fatal(err)
	}
	writeVersion("..v3", configWithAddr(":8089"))
	if err := os.Symlink("..v3", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if c := f.nextChange(t); c.Server.Addr != ":8089" {
		t.Fatalf("onChange got %q, want :8089", c.Server.Addr)
	}
}

func TestWatchErrors(t *testing.T) {
	t.Parallel()
	if _, err := Watch(filepath.Join(t.TempDir(), "missing-dir", "config.yaml"), func(*Config) error { return nil }, nil); err == nil {
		t.Error("Watch in a missing directory succeeded")
	}
	if _, err := Watch(writeConfig(t, "{}"), nil, nil); err == nil {
		t.Error("Watch without onChange succeeded")
	}
}

// Not parallel: goleak.VerifyNone must not see other tests' watchers.
func TestWatcherCloseStopsItsGoroutines(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	path := writeConfig(t, configWithAddr(":8081"))
	w, err := Watch(path, func(*Config) error {
		close(entered)
		<-release
		return nil
	}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(configWithAddr(":8089")), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(waitFor):
		t.Fatal("onChange was not called")
	}

	closed := make(chan error)
	go func() { closed <- w.Close() }()
	close(release) // Close waits for the running onChange, then returns
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitFor):
		t.Fatal("Close did not return")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	goleak.VerifyNone(t)
}
