package app

import (
	"context"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/knowledge"
)

// OpenKnowledge opens the knowledge base cfg describes (its store, and its
// embedder when one is configured) without starting a server: for
// subcommands such as `chatpipe eval`. The caller closes it. Sample
// documents are loaded only when opts.Samples is set.
func OpenKnowledge(ctx context.Context, cfg *config.Config, opts Options) (*knowledge.Service, error) {
	a := &App{opts: opts, log: opts.Logger}
	if a.log == nil {
		a.log = zap.NewNop()
	}
	return a.openKnowledge(ctx, cfg)
}
