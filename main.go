// Command chatpipe answers questions over a knowledge base with an LLM and
// streams the answers to web frontends as typed Server-Sent Events.
//
//	go run .                      # config.yaml if present, else built-in defaults
//	go run . -config other.yaml   # another config file (watched for changes)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/app"
	"github.com/chatpipe/chatpipe/internal/samples"
)

func main() {
	path := flag.String("config", config.DefaultPath, "configuration file (CHATPIPE_* environment variables override its keys)")
	flag.Parse()

	cfg, err := config.Load(*path)
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	watch := cfg.File // nothing to watch when running on built-in defaults
	a, err := app.New(ctx, cfg, app.Options{ConfigPath: watch, Samples: samples.FS})
	if err != nil {
		fail(err)
	}
	if err := a.Serve(ctx); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "chatpipe:", err)
	os.Exit(1)
}
