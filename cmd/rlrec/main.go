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
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
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

// Env is what a command may touch: its streams and logger, and what they
// are connected to.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Logger *slog.Logger
	// IsTerminal reports whether Stderr is an interactive terminal on which
	// progress is wanted (see isTerminal).
	IsTerminal bool
	// StdinTerminal and StdoutTerminal report whether Stdin and Stdout are
	// terminals: a command then does not wait silently for input, and
	// writes no binary output to the screen.
	StdinTerminal, StdoutTerminal bool
	// Width is the width in columns of the terminal on Stdout; 0 when
	// Stdout is no terminal or its width is unknown.
	Width int
	// ProgressInterval is the shortest time between two renderings of a
	// progress display on Stderr; 0 means 100 ms.
	ProgressInterval time.Duration
}

// commands lists every command, in the order help shows them.
var commands = []*Command{
	cmdDemo,
	cmdSimulate,
	cmdIngest,
	cmdServe,
	cmdInspect,
	cmdReplay,
	cmdStats,
	cmdReport,
	cmdCopy,
	cmdExport,
	cmdVerify,
	cmdRecover,
	cmdReleaseClaim,
	cmdVersion,
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
		Stdin:          os.Stdin,
		Stdout:         os.Stdout,
		Stderr:         os.Stderr,
		IsTerminal:     isTerminal(os.Stderr),
		StdinTerminal:  term.IsTerminal(int(os.Stdin.Fd())),
		StdoutTerminal: term.IsTerminal(int(os.Stdout.Fd())),
		Width:          terminalWidth(os.Stdout),
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
	if name == "--version" || name == "-version" {
		name = cmdVersion.Name
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
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(env.Stdout, c)
			return 0
		}
		fmt.Fprintf(env.Stderr, "rlrec %s: %v\nusage: rlrec %s\nrun 'rlrec help %s' for details\n", c.Name, err, c.UsageLine, c.Name)
		return 2
	}
	if err := c.Run(ctx, env, pos); err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(env.Stderr, "rlrec %s: %v\nusage: rlrec %s\n", c.Name, err, c.UsageLine)
			return 2
		}
		fmt.Fprintf(env.Stderr, "rlrec %s: %v\n", c.Name, wordError(err))
		return 1
	}
	return 0
}

// parseArgs parses the flags of fs wherever they stand in args and returns
// the positional arguments in order. It is the one rule of every command:
// a flag may come before or after the positional arguments
// ("verify ROOT --max-problems 5" is "verify --max-problems 5 ROOT"),
// "--" ends the flags (what follows is positional even when it starts with
// "-"), and "-" alone is positional (standard input or output).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		// One flag, with its value when it takes one and the value is the
		// next argument.
		chunk := args[i : i+1]
		name := strings.TrimLeft(a, "-")
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(args) {
			chunk = args[i : i+2]
			i++
		}
		if err := fs.Parse(chunk); err != nil {
			return nil, err
		}
	}
	return pos, nil
}

// isBoolFlag reports whether f takes no value ("--json", not "--json x").
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func lookup(name string) *Command {
	for _, c := range commands {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// helpWidth is the width help text is wrapped to.
const helpWidth = 80

func printCommands(w io.Writer) {
	fmt.Fprintf(w, "rlrec records rlmesh sessions as Parquet and reads them back.\n\nUsage: rlrec <command> [flags] [args]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.Name, c.Short)
	}
	fmt.Fprintf(w, "\nRun 'rlrec help <command>' for a command's flags and an example.\n")
	fmt.Fprintf(w, "Flags may come before or after a command's arguments; -- ends them.\n")
}

// printHelp prints a command's usage line, its long help and its flags,
// wrapped at helpWidth columns. Long flags are spelled with two dashes,
// one-letter flags with one (package flag accepts either).
func printHelp(w io.Writer, c *Command) {
	fmt.Fprintf(w, "%s\n\n%s\n", wrapUsage("usage: rlrec "+c.UsageLine, helpWidth), c.Long)
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	if c.SetFlags != nil {
		c.SetFlags(fs)
	}
	fmt.Fprintf(w, "\nFlags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		line := "  " + flagName(f.Name)
		if arg != "" {
			line += " " + arg
		}
		fmt.Fprintln(w, line)
		if !isZeroDefault(f) {
			def := f.DefValue
			if g, ok := f.Value.(flag.Getter); ok {
				if _, isString := g.Get().(string); isString {
					def = strconv.Quote(def)
				}
			}
			usage += " (default " + def + ")"
		}
		for _, l := range wrapWords(usage, helpWidth-8) {
			fmt.Fprintf(w, "        %s\n", l)
		}
	})
	fmt.Fprintf(w, "  -h, --help\n        show this help\n")
}

// flagName spells a flag as help shows it: --name, or -n for one letter.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// isZeroDefault reports whether a flag's default is its type's zero value,
// which help leaves unsaid.
func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return true
	}
	return false
}

// wrapWords wraps text at spaces into lines of at most width columns (a
// single word longer than width stands on its own line).
func wrapWords(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// wrapUsage wraps a usage line at width columns between its words and
// bracketed groups ("[--env NAME]" stays whole), indenting continuation
// lines under the command's arguments.
func wrapUsage(line string, width int) string {
	var tokens []string
	depth, start := 0, 0
	for i, r := range line {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ' ':
			if depth == 0 {
				if i > start {
					tokens = append(tokens, line[start:i])
				}
				start = i + 1
			}
		}
	}
	if start < len(line) {
		tokens = append(tokens, line[start:])
	}
	if len(tokens) < 3 {
		return line
	}
	// "usage: rlrec NAME" starts every line's indentation.
	head := strings.Join(tokens[:3], " ")
	indent := strings.Repeat(" ", utf8.RuneCountInString(head))
	var b strings.Builder
	b.WriteString(head)
	col := utf8.RuneCountInString(head)
	for _, t := range tokens[3:] {
		n := utf8.RuneCountInString(t)
		if col+1+n > width && col > len(indent) {
			b.WriteString("\n" + indent)
			col = len(indent)
		}
		b.WriteString(" " + t)
		col += 1 + n
	}
	return b.String()
}
