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
		fmt.Fprintf(w, "Usage: baton %s %s\n\n%s\n\nFlags:\n", name, synopsis, about)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parse parses args, printing the usage for --help. A flag error becomes a
// usageError; positional arguments are returned.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	// The flag package calls Usage itself on --help and on every error;
	// here the help is printed once, and an error is one line.
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return nil, errHelpShown
	case err != nil:
		return nil, &usageError{err: err}
	}
	return fs.Args(), nil
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
