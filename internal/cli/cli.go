// Package cli holds chatpipe's subcommands (`chatpipe NAME ARGS...`):
// each command lives in its own file and registers itself in init, so
// main.go only dispatches. With no subcommand, chatpipe serves.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/registry"
)

// Command is one subcommand.
type Command struct {
	Name    string // what follows `chatpipe` on the command line
	Summary string // one line for `chatpipe help`
	// Run runs the command with the arguments after its name. An error
	// is printed as "chatpipe NAME: err" and exits 1; ErrUsage exits 2.
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// ErrUsage reports bad arguments; the command has printed its usage.
// A command returns flag.ErrHelp instead when its usage was asked for
// (-h, -help): exit 0.
var ErrUsage = errors.New("usage")

// parseFlags parses args into fs: flag.ErrHelp when they ask for the
// usage, ErrUsage when they are wrong (fs has printed why and the usage).
func parseFlags(fs *flag.FlagSet, args []string) error {
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return flag.ErrHelp
	case err != nil:
		return ErrUsage
	}
	return nil
}

// commands are the subcommands, by the name typed after `chatpipe`.
var commands = registry.New[Command]("command")

// Register adds a command; it panics on a duplicate name (a programming
// error found at start).
func Register(c Command) { commands.Register(c.Name, c) }

// Lookup returns the command called name.
func Lookup(name string) (Command, bool) { return commands.Lookup(name) }

// Help lists the commands, one a line.
func Help(w io.Writer) {
	fmt.Fprintln(w, "usage: chatpipe [-config FILE]          serve (the default)")
	for _, n := range commands.Names() {
		c, _ := commands.Lookup(n)
		fmt.Fprintf(w, "       chatpipe %-25s %s\n", n+" ...", c.Summary)
	}
}

// Main runs c and returns the process exit code.
func Main(ctx context.Context, c Command, args []string, stdout, stderr io.Writer) int {
	err := c.Run(ctx, args, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case err == flag.ErrHelp:
		return 0 // the usage was what was asked for
	case err == ErrUsage:
		return 2
	default:
		fmt.Fprintf(stderr, "chatpipe %s: %s\n", c.Name, strings.TrimSpace(err.Error()))
		return 1
	}
}

// FlagSet returns a flag set for command name that writes its usage to
// stderr and returns errors instead of exiting, with the -config flag
// every command that reads the configuration shares.
func FlagSet(name string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("chatpipe "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", config.DefaultPath, "configuration file (CHATPIPE_* environment variables override its keys)")
	return fs, path
}
