// Command rlrec records rlmesh sessions as Parquet and reads them back.
//
// Usage:
//
//	rlrec <command> [flags] [args]
//
// Run `rlrec help` for the list of commands and `rlrec help <command>` (or
// `rlrec <command> --help`) for one command's flags and an example.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Command is one rlrec subcommand, defined in a file of its own.
type Command struct {
	// Name is the word that selects the command.
	Name string
	// UsageLine is the synopsis after "rlrec ".
	UsageLine string
	// Short is a one-line description for the command list.
	Short string
	// Long is the full help text, with an example.
	Long string
	// SetFlags registers the command's flags; it may be nil.
	SetFlags func(fs *flag.FlagSet)
	// Run executes the command with its positional arguments.
	Run func(ctx context.Context, env *Env, args []string) error
	// Records is set on the commands that run a recorder: main gives their
	// process the recorder's memory limit (see limitMemory).
	Records bool
}

// Env is what a command may touch: its streams and logger.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Logger *slog.Logger
	// IsTerminal reports whether Stderr is an interactive terminal (for
	// progress bars and colour).
	IsTerminal bool
}

// commands lists every command, in the order help shows them.
var commands = []*Command{
	cmdDemo,
	cmdSimulate,
	cmdIngest,
	cmdServe,
	cmdInspect,
	cmdReplay,
	cmdVerify,
	cmdRecover,
}

// usageError marks an error in how the command was invoked (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := &Env{
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		IsTerminal: isTerminal(os.Stderr),
	}
	env.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if len(os.Args) > 1 {
		if c := lookup(os.Args[1]); c != nil && c.Records {
			limitMemory()
		}
	}
	code := run(ctx, env, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit status: 0 on
// success, 1 on failure, 2 on a usage error.
func run(ctx context.Context, env *Env, args []string) int {
	if len(args) == 0 {
		printCommands(env.Stderr)
		return 2
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" || name == "-help" {
		if len(args) > 1 {
			if c := lookup(args[1]); c != nil {
				printHelp(env.Stdout, c)
				return 0
			}
			fmt.Fprintf(env.Stderr, "rlrec help %s: unknown command; run 'rlrec help' for the list\n", args[1])
			return 2
		}
		printCommands(env.Stdout)
		return 0
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(env.Stderr, "rlrec %s: unknown command; run 'rlrec help' for the list\n", name)
		return 2
	}
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if c.SetFlags != nil {
		c.SetFlags(fs)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(env.Stdout, c)
			return 0
		}
		fmt.Fprintf(env.Stderr, "rlrec %s: %v\nusage: rlrec %s\nrun 'rlrec help %s' for details\n", c.Name, err, c.UsageLine, c.Name)
		return 2
	}
	if err := c.Run(ctx, env, fs.Args()); err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(env.Stderr, "rlrec %s: %v\nusage: rlrec %s\n", c.Name, err, c.UsageLine)
			return 2
		}
		fmt.Fprintf(env.Stderr, "rlrec %s: %v\n", c.Name, err)
		return 1
	}
	return 0
}

func lookup(name string) *Command {
	for _, c := range commands {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func printCommands(w io.Writer) {
	fmt.Fprintf(w, "rlrec records rlmesh sessions as Parquet and reads them back.\n\nUsage: rlrec <command> [flags] [args]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.Name, c.Short)
	}
	fmt.Fprintf(w, "\nRun 'rlrec help <command>' for a command's flags and an example.\n")
}

func printHelp(w io.Writer, c *Command) {
	fmt.Fprintf(w, "usage: rlrec %s\n\n%s\n", c.UsageLine, c.Long)
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	if c.SetFlags != nil {
		c.SetFlags(fs)
	}
	has := false
	fs.VisitAll(func(*flag.Flag) { has = true })
	if has {
		fmt.Fprintf(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}
