package app

import (
	"errors"
	"os"
	"strings"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/pipeline"
)

// withSource says where each key a plugin or tool error names came from:
// the CHATPIPE_* variable that set it, else the config file, else the
// built-in defaults — the operator must know what to edit.
func withSource(cfg *config.Config, err error) error {
	var leaves []error
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		leaves = multi.Unwrap()
	} else {
		leaves = []error{err}
	}
	out := make([]error, len(leaves))
	for i, leaf := range leaves {
		out[i] = leaf
		key := keyOf(leaf)
		if key == "" {
			continue
		}
		source := "built-in defaults"
		switch name := config.EnvName(key); {
		case os.Getenv(name) != "":
			source = "from " + name
		case cfg.File != "":
			source = "in " + cfg.File
		}
		out[i] = &sourcedError{err: leaf, source: source}
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

// keyOf is the config key err is about: a KeyError's, or the leading
// "plugins.x.y:" a plugin wrote itself.
func keyOf(err error) string {
	var ke *pipeline.KeyError
	if errors.As(err, &ke) {
		return ke.Key
	}
	key, _, ok := strings.Cut(err.Error(), ": ")
	if !ok || strings.ContainsAny(key, " \t") ||
		!(strings.HasPrefix(key, "plugins.") || strings.HasPrefix(key, "pipelines.")) {
		return ""
	}
	return key
}

type sourcedError struct {
	err    error
	source string
}

func (e *sourcedError) Error() string { return e.err.Error() + " [" + e.source + "]" }
func (e *sourcedError) Unwrap() error { return e.err }
