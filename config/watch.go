package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
)

// reloadDebounce is how long the file must stay quiet before it is read.
// One save is several events (truncate, write, maybe rename); waiting lets
// them settle into one reload.
const reloadDebounce = 250 * time.Millisecond

// Watcher reloads a config file when it changes. It uses fsnotify directly
// rather than viper.WatchConfig, which races with readers, cannot be
// stopped and exits the process when the watcher cannot start.
type Watcher struct {
	path     string // the file, absolute
	onChange func(*Config) error
	log      *zap.Logger
	fsw      *fsnotify.Watcher
	debounce time.Duration

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	// Owned by the run goroutine.
	target  string            // path with symlinks resolved ("" when missing)
	dirs    []string          // directories being watched
	applied []byte            // file contents onChange last accepted, and its Files' (snapshot)
	files   map[string]string // the current config's Files, each with its symlinks' target ("" when missing)
	current *Config           // the config in use as far as we know, for logging what changed
}

// Watch watches the config file at path (DefaultPath when empty) and, each
// time it settles after a change, loads it afresh (file, defaults and
// environment), validates it and passes it to onChange. If loading or
// validation fails, or onChange returns an error, the error is logged at
// warn and onChange is not called, so the caller keeps its current config.
// A file that is missing, empty or unchanged is never applied.
//
// It watches the file's directory, so it sees editors that replace the file
// by renaming, and the symlink swap Kubernetes does for ConfigMaps.
// onChange runs on the watcher's goroutine, one call at a time; Close waits
// for a running call to return. Watch does not call onChange for the
// file's current contents: load them with Load first.
func Watch(path string, onChange func(*Config) error, logger *zap.Logger) (*Watcher, error) {
	if onChange == nil {
		return nil, errors.New("config: Watch needs an onChange function")
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	if path == "" {
		path = DefaultPath
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config: watch %s: %w", path, err)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("config: watch %s: %w", path, err)
	}
	w := &Watcher{
		path:     abs,
		onChange: onChange,
		log:      logger.With(zap.String("file", abs)),
		fsw:      fsw,
		debounce: reloadDebounce,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if err := w.watchDir(filepath.Dir(abs)); err != nil {
		_ = fsw.Close()
		return nil, fmt.Errorf("config: watch %s: %w", path, err)
	}
	w.retarget()
	if cfg, err := Load(path); err == nil {
		w.current = cfg // best effort: only used to log which keys changed
		w.follow(cfg)
	}
	go w.run()
	return w, nil
}

// Close stops watching and waits for the watcher's goroutine, including a
// running onChange, to return. It is safe to call more than once.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		close(w.stop)
		<-w.done
		w.closeErr = w.fsw.Close()
	})
	return w.closeErr
}

func (w *Watcher) run() {
	defer close(w.done)
	timer := time.NewTimer(w.debounce)
	timer.Stop()
	defer timer.Stop()
	var fire <-chan time.Time // nil until an event arms the timer
	for {
		select {
		case <-w.stop:
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if w.relevant(ev) {
				timer.Reset(w.debounce)
				fire = timer.C
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were dropped, ours among them perhaps: look anyway.
				timer.Reset(w.debounce)
				fire = timer.C
			}
			w.log.Error("config watcher error; hot reload may miss changes", zap.Error(err))
		case <-fire:
			fire = nil
			w.reload()
		}
	}
}

// relevant reports whether ev may have changed the file: a write, create,
// rename or removal of the file itself or of its symlink target, or any
// create/rename/removal in the directory that makes the file resolve
// somewhere else (a Kubernetes ConfigMap swapping its ..data link).
func (w *Watcher) relevant(ev fsnotify.Event) bool {
	const changes = fsnotify.Write | fsnotify.Create | fsnotify.Rename | fsnotify.Remove
	if ev.Op&changes == 0 {
		return false // Chmod alone: touch, backup tools
	}
	name := filepath.Clean(ev.Name)
	if name == w.path || (w.target != "" && name == w.target) {
		return true
	}
	for f, target := range w.files {
		if name == f || (target != "" && name == target) || resolve(f) != target {
			return true
		}
	}
	if ev.Op.Has(fsnotify.Write) && !ev.Op.Has(fsnotify.Create) {
		return false // another file's contents changed
	}
	return resolve(w.path) != w.target
}

// reload reads, loads, validates and offers the file to onChange.
func (w *Watcher) reload() {
	w.retarget()
	data, err := os.ReadFile(w.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		w.log.Warn("config file is gone; keeping the current configuration")
		return
	case err != nil:
		w.log.Warn("config reload failed; keeping the current configuration", zap.Error(err))
		return
	}
	cfg, err := parse(data, w.path)
	snap := data
	if err == nil {
		snap = w.snapshot(data, cfg)
		w.follow(cfg) // a file a rejected config names is watched too: fixing it retries
	}
	if w.applied != nil && bytes.Equal(snap, w.applied) {
		w.log.Debug("config file unchanged")
		return
	}
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		w.log.Warn("config reload rejected; keeping the current configuration", zap.Error(err))
		return
	}
	if err := w.call(cfg); err != nil {
		w.log.Warn("config reload rejected by the application; keeping the current configuration", zap.Error(err))
		return
	}
	w.applied = snap
	if w.current == nil {
		w.log.Info("config reloaded")
	} else {
		changed := changedKeys(w.current, cfg)
		if len(changed) == 0 {
			changed = []string{"(the contents of a file it reads)"}
		}
		w.log.Info("config reloaded", zap.Strings("changed", changed))
	}
	w.current = cfg
}

// changedKeys lists the leaf keys whose values differ between a and b. It
// names keys only, never values, so it is safe to log.
func changedKeys(a, b *Config) []string {
	fa, fb := map[string]any{}, map[string]any{}
	flattenPlain(fa, "", plain(reflect.ValueOf(*a)))
	flattenPlain(fb, "", plain(reflect.ValueOf(*b)))
	var keys []string
	for k, va := range fa {
		if vb, ok := fb[k]; !ok || !reflect.DeepEqual(va, vb) {
			keys = append(keys, k)
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func flattenPlain(out map[string]any, prefix string, v any) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		out[strings.TrimSuffix(prefix, ".")] = v
		return
	}
	for k, sub := range m {
		flattenPlain(out, prefix+k+".", sub)
	}
}

// follow watches the files cfg reads besides itself (Config.Files), and
// where their symlinks lead (a Kubernetes ConfigMap swaps a link), so
// that editing one reloads the configuration.
func (w *Watcher) follow(cfg *Config) {
	w.files = map[string]string{}
	for _, f := range cfg.Files() {
		target := resolve(f)
		w.files[f] = target
		dirs := []string{filepath.Dir(f)}
		if target != "" {
			dirs = append(dirs, filepath.Dir(target))
		}
		for _, d := range dirs {
			if err := w.watchDir(d); err != nil {
				w.log.Warn("cannot watch a file the configuration reads; edit the config file to reload it",
					zap.String("path", f), zap.Error(err))
			}
		}
	}
}

// maxFollowedFileBytes bounds what snapshot reads of a followed file;
// the application refuses larger ones anyway.
const maxFollowedFileBytes = 16 << 20

// snapshot is the config file's contents followed by those of the files
// cfg reads (a missing or unreadable one as its error): what a reload
// compares to tell whether anything changed.
func (w *Watcher) snapshot(data []byte, cfg *Config) []byte {
	snap := bytes.Clone(data)
	for _, f := range cfg.Files() {
		snap = append(snap, 0)
		snap = append(snap, f...)
		snap = append(snap, 0)
		snap = append(snap, readFollowed(f)...)
	}
	return snap
}

// readFollowed returns up to maxFollowedFileBytes+1 bytes of a regular
// file, or the error that kept it from being read (a FIFO or a device is
// not opened: that could block or never end).
func readFollowed(path string) []byte {
	fi, err := os.Stat(path)
	if err != nil {
		return []byte(err.Error())
	}
	if !fi.Mode().IsRegular() {
		return []byte("not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return []byte(err.Error())
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFollowedFileBytes+1))
	if err != nil {
		return []byte(err.Error())
	}
	return b
}

// call runs onChange, turning a panic into an error so that a bad reload
// cannot take the server down.
func (w *Watcher) call(cfg *Config) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("onChange panicked: %v", r)
			w.log.Error("config onChange panicked", zap.Any("panic", r), zap.Stack("stack"))
		}
	}()
	return w.onChange(cfg)
}

// retarget follows the file's symlinks and, when they lead into another
// directory, watches that one too so writes to the real file are seen.
func (w *Watcher) retarget() {
	w.target = resolve(w.path)
	if w.target == "" {
		return
	}
	if err := w.watchDir(filepath.Dir(w.target)); err != nil {
		w.log.Warn("cannot watch the config file's symlink target", zap.String("target", w.target), zap.Error(err))
	}
}

func (w *Watcher) watchDir(dir string) error {
	for _, d := range w.dirs {
		if d == dir {
			return nil
		}
	}
	if err := w.fsw.Add(dir); err != nil {
		return err
	}
	w.dirs = append(w.dirs, dir)
	return nil
}

// resolve returns path with every symlink followed, or "" if it does not
// resolve (missing file, dangling link).
func resolve(path string) string {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	return p
}
