package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

// Exit codes, as the shell sees them.
const (
	exitOK          = 0
	exitRuntime     = 1   // the command ran and failed
	exitUsage       = 2   // the command line was wrong
	exitInterrupted = 130 // SIGINT or SIGTERM, after cleaning up
)

// command is one subcommand: run gets the arguments after its name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, out outputs) error
}

// outputs are where a command writes: results on stdout (and nothing else
// there with --json), progress and notes on stderr.
type outputs struct {
	stdout, stderr io.Writer
}

var commands = map[string]command{}

// register adds a subcommand; each command's file registers itself.
func register(name, summary string, run func(context.Context, []string, outputs) error) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], outputs{stdout: os.Stdout, stderr: os.Stderr})
	stop()
	os.Exit(code)
}

// run runs one command line and returns its exit code. Every error is one
// line on stderr: a user's mistake never shows a stack trace.
func run(ctx context.Context, args []string, out outputs) int {
	if len(args) == 0 || isHelp(args[0]) {
		printUsage(out.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	name := args[0]
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(out.stderr, "baton: unknown command %q (commands: %s; see baton --help)\n", name, strings.Join(commandNames(), ", "))
		return exitUsage
	}
	err := cmd.run(ctx, args[1:], out)
	var usage *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelpShown):
		return exitOK
	case errors.As(err, &usage):
		fmt.Fprintf(out.stderr, "baton %s: %v (see baton %s --help)\n", name, usage.err, name)
		return exitUsage
	case ctx.Err() != nil:
		fmt.Fprintf(out.stderr, "baton %s: interrupted; cleaned up\n", name)
		return exitInterrupted
	default:
		fmt.Fprintf(out.stderr, "baton %s: %v\n", name, oneLine(err))
		return exitRuntime
	}
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// commandNames are the commands' names, sorted.
func commandNames() []string {
	return slices.Sorted(maps.Keys(commands))
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "baton: a fast, fair and safe Redis lock, and the tools to see it work.")
	fmt.Fprintln(w, "\nUsage: baton <command> [flags]\n\nCommands:")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun baton <command> --help for its flags.")
}
