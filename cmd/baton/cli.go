package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// usageError is a mistake on the command line: run prints it as one line
// and exits with exitUsage.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// errHelpShown ends a command whose --help was printed.
var errHelpShown = errors.New("help shown")

// newFlags makes a command's flag set. The flag package's own messages
// are silenced: parse turns them into one line.
func newFlags(name, synopsis, about string, out outputs) *flag.FlagSet {
	fs := flag.NewFlagSet("baton "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		w := out.stdout
		fmt.Fprintf(w, "Usage: baton %s %s\n\n%s\n\nFlags (before or after the arguments, in any order; \"--\" ends them):\n", name, synopsis, about)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parse parses args, printing the usage for --help, and returns the
// positional arguments in order. A flag error becomes a usageError.
//
// Flags may stand anywhere among the positional arguments, as people type
// them (baton inspect KEY --addr A): the flag package stops at the first
// positional argument, so splitArgs first takes the flags out. "--" ends
// the flags, so that a KEY beginning with "-" can be given.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	flags, positional := splitArgs(fs, args)
	// The flag package calls Usage itself on --help and on every error;
	// here the help is printed once, and an error is one line.
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(flags)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return nil, errHelpShown
	case err != nil:
		return nil, &usageError{err: err}
	}
	// splitArgs left the flag package no positional argument: every flag
	// that takes a value has it, and Parse consumed them all.
	return positional, nil
}

// splitArgs separates args into flags, with their values, and positional
// arguments, each in order, by the flag package's own rules, so that
// Parse reads the flags as if they all came first: "-" is positional,
// any other argument beginning with "-" is a flag, and a flag that is
// not boolean and has no "=value" takes the next argument as its value,
// whatever it looks like ("--prefix --" sets the prefix to "--"). After
// "--" every argument is positional.
func splitArgs(fs *flag.FlagSet, args []string) (flags, positional []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, append(positional, args[i+1:]...)
		case len(a) < 2 || a[0] != '-':
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		if takesNextArg(fs, a) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return flags, positional
}

// takesNextArg reports whether the flag arg (-name or --name, maybe with
// =value) takes the next argument as its value: it names a flag of fs
// that is not boolean, and carries no value of its own. A name fs does
// not know takes nothing: Parse refuses it.
func takesNextArg(fs *flag.FlagSet, arg string) bool {
	name := strings.TrimPrefix(arg[1:], "-")
	if strings.Contains(name, "=") {
		return false
	}
	fl := fs.Lookup(name)
	if fl == nil {
		return false
	}
	// The interface by which the flag package tells a boolean flag.
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// noArgs refuses positional arguments for commands that take none.
func noArgs(rest []string) error {
	if len(rest) > 0 {
		return usagef("unexpected argument %q", rest[0])
	}
	return nil
}

// addrFlagHelp describes --addr the same way in every command.
const addrFlagHelp = "the server: host:port, redis://[user:pass@]host:port[/db], rediss://... (TLS) or unix:///path"

// oneLine keeps an error to one line: a server's reply or a wrapped
// error can carry newlines.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}

// isTerminal reports whether w is a terminal, where a progress bar may
// redraw itself; a file or a pipe gets none, so that a log holds no
// redraws.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
