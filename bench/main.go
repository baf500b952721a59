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
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is the command line.
type config struct {
	addr       string
	rounds     int
	ops        int
	cpuProfile string
	impls      string
	scenarios  map[int]bool
	throughput time.Duration // scenario 2's time per implementation per round
	handoff    time.Duration // scenario 3's
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
	scenarios := fs.String("scenarios", "1,2,3", "comma-separated scenarios to run: 1 uncontended, 2 throughput, 3 hand-off")
	fs.DurationVar(&c.throughput, "throughput-duration", time.Second, "scenario 2: time per implementation per round")
	fs.DurationVar(&c.handoff, "handoff-duration", 2*time.Second, "scenario 3: time per implementation per round")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.scenarios = map[int]bool{}
	for f := range strings.SplitSeq(*scenarios, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 3 {
			return c, fmt.Errorf("--scenarios %q: want numbers from 1 to 3", *scenarios)
		}
		c.scenarios[n] = true
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	case c.rounds < 1:
		return c, fmt.Errorf("--rounds %d: want at least 1", c.rounds)
	case c.ops < 1:
		return c, fmt.Errorf("--ops %d: want at least 1", c.ops)
	case c.throughput <= 0:
		return c, fmt.Errorf("--throughput-duration %s: want more than 0", c.throughput)
	case c.handoff <= 0:
		return c, fmt.Errorf("--handoff-duration %s: want more than 0", c.handoff)
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
	var groups []handoffGroup
	if c.scenarios[3] {
		groups, err = openHandoff(ctx, t.addr, prefix, all)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, closeHandoff(groups)) }()
	}
	stopProfile, err := startCPUProfile(c.cpuProfile)
	if err != nil {
		return err
	}
	err = runScenarios(ctx, c, insts, groups, t.addr, stdout, stderr, aboutRun(args, version, t.about))
	if perr := stopProfile(); err == nil {
		err = perr
	}
	return err
}

// aboutRun is the lines every table is printed with: the command, the
// server and the machine.
func aboutRun(args []string, version, about string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = a
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\*?;&|<>()") {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	cmd := strings.TrimSpace("go run . " + strings.Join(quoted, " "))
	return fmt.Sprintf("Command (in bench/): `%s`.\nServer: %s, %s.\n%s.\n", cmd, version, about, machine())
}

// runScenarios runs the scenarios c selects, in order, and writes a
// table for each as soon as it is done, followed by about.
func runScenarios(ctx context.Context, c config, insts []instance, groups []handoffGroup, addr string, stdout, stderr io.Writer, about string) error {
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
	sep := ""
	if c.scenarios[1] {
		samples, err := runUncontended(ctx, insts, c.rounds, c.ops, stderr)
		if err != nil {
			return err
		}
		if err := writeUncontendedTable(stdout, summarize(names, samples, base), c.rounds, c.ops); err != nil {
			return err
		}
		if err := writeFloorSpread(stdout, samples, floor); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\n%s", about)
		sep = "\n"
	}
	if c.scenarios[2] {
		samples, err := runThroughput(ctx, insts, c.rounds, c.throughput, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, `%s## Throughput

%d goroutines, each doing Lock+Unlock back to back on a key of its own,
through one instance per implementation, %s per implementation per round,
%d rounds, interleaved. The floor gives each goroutine a bare connection of
its own doing two PINGs per operation. Stalled counts the goroutines whose
Lock, on a key no one held, was still waiting %s after the round's end;
they stop there, and ops/s counts the operations the others completed.

`, sep, throughputWorkers, c.throughput, c.rounds, stallGrace)
		if err := writeFiguresTable(stdout, names, throughputColumns, samples, base); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\n%s", about)
		sep = "\n"
	}
	if c.scenarios[3] {
		admin, err := newGoRedis(ctx, addr)
		if err != nil {
			return err
		}
		defer admin.Close()
		res, err := runHandoff(ctx, groups, admin, c.rounds, c.handoff, stderr)
		if err != nil {
			return err
		}
		gnames := make([]string, len(groups))
		gbase := -1
		for i, g := range groups {
			gnames[i] = g.name
			if g.name == baseline {
				gbase = i
			}
		}
		fmt.Fprintf(stdout, `%s## Hand-off

%d lockers on one key, each an instance of its own, as separate processes
would be; each hold is one INCR through another client. %s per
implementation per round, %d rounds, interleaved. A hand-off runs from a
holder starting its release to another locker's Lock returning; kept is
the share of acquisitions by the locker that had just released. A wait is
a Lock call, and one cut short by the end of the round counts until then.
Jain is Jain's fairness index over the lockers' acquisitions (1: all
equal; 1/%[2]d: one took all). cmds/acq is the server's commands per
acquisition from INFO commandstats, commands inside scripts included, the
INCRs and INFOs not. The floor does not apply.

`, sep, handoffLockers, c.handoff, c.rounds)
		if err := writeFiguresTable(stdout, gnames, handoffColumns, res.samples, gbase); err != nil {
			return err
		}
		if err := writeHandoffCommands(stdout, gnames, res); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\n%s", about)
	}
	return nil
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
