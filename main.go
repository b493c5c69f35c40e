// Command chatpipe answers questions over a knowledge base with an LLM and
// streams the answers to web frontends as typed Server-Sent Events.
//
//	go run .                      # config.yaml if present, else built-in defaults
//	go run . -config other.yaml   # another config file (watched for changes)
//	go run . help                 # the subcommands (ingest, eval, backup, ...)
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
	"github.com/chatpipe/chatpipe/internal/cli"
	"github.com/chatpipe/chatpipe/internal/samples"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if len(os.Args) > 1 {
		switch name := os.Args[1]; {
		case name == "help" || name == "-h" || name == "--help":
			cli.Help(os.Stdout)
			return
		default:
			if c, ok := cli.Lookup(name); ok {
				code := cli.Main(ctx, c, os.Args[2:], os.Stdout, os.Stderr)
				stop()
				os.Exit(code)
			}
		}
	}

	path := flag.String("config", config.DefaultPath, "configuration file (CHATPIPE_* environment variables override its keys)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "chatpipe: unknown command %q\n", flag.Arg(0))
		cli.Help(os.Stderr)
		os.Exit(2)
	}

	cfg, err := config.Load(*path)
	if err != nil {
		fail(err)
	}

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
