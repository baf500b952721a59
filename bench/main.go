package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// config is the command line.
type config struct {
	addr       string
	rounds     int
	ops        int
	cpuProfile string
	impls      string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "", "host:port of the Redis server (default: a throwaway redis-server from PATH)")
	fs.IntVar(&c.rounds, "rounds", 20, "rounds; each runs every implementation once")
	fs.IntVar(&c.ops, "ops", 1000, "operations per implementation per round")
	fs.StringVar(&c.impls, "impls", "", "comma-separated ids of the implementations to run (default: all): baton-fast, baton-fair, rueidislock, redsync, redislock, notify-eval, floor")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the rounds to this file; samples carry the label impl=<implementation>, for pprof's -tagfocus")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	case c.rounds < 1:
		return c, fmt.Errorf("--rounds %d: want at least 1", c.rounds)
	case c.ops < 1:
		return c, fmt.Errorf("--ops %d: want at least 1", c.ops)
	}
	return c, nil
}

// run measures every implementation and writes the report on stdout,
// progress on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	all, err := selectImpls(impls(), c.impls)
	if err != nil {
		return err
	}
	t, err := findTarget(c.addr)
	if err != nil {
		return err
	}
	if t.stop != nil {
		defer t.stop()
	}
	version, err := serverVersion(ctx, t.addr)
	if err != nil {
		return fmt.Errorf("server %s: %w", t.addr, err)
	}
	prefix, err := runPrefix()
	if err != nil {
		return err
	}
	insts, err := openAll(ctx, t.addr, prefix, all)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeAll(insts)) }()
	stopProfile, err := startCPUProfile(c.cpuProfile)
	if err != nil {
		return err
	}
	samples, err := runUncontended(ctx, insts, c.rounds, c.ops, stderr)
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	names := make([]string, len(insts))
	base, floor := -1, -1 // no ratios without the baseline
	for i, in := range insts {
		names[i] = in.name
		if in.name == baseline {
			base = i
		}
		if in.floor {
			floor = i
		}
	}
	fmt.Fprintf(stdout, "Server: %s, %s.\n%s.\n\n", version, t.about, machine())
	if err := writeUncontendedTable(stdout, summarize(names, samples, base), c.rounds, c.ops); err != nil {
		return err
	}
	return writeFloorSpread(stdout, samples, floor)
}

// runPrefix returns a key prefix of this run's own, so that runs against
// one server do not share keys.
func runPrefix() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "baton-bench:" + hex.EncodeToString(b[:]) + ":", nil
}
