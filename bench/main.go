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
	serverBin  string
	rounds     int
	ops        int
	trials     int
	losses     int // scenario 7's, per implementation
	cpuProfile string
	plots      string
	pin        *cpuPlan // nil without --pin
	impls      string
	scenarios  map[int]bool
	// json collects the report for --json; nil without it.
	json       *jsonReport
	throughput time.Duration // scenario 2's time per implementation per round
	handoff    time.Duration // scenario 3's
	slowSteps  time.Duration // scenario 3: report steps longer than this; 0 for none
}

// lastScenario is the number of the last scenario.
const lastScenario = 7

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
	fs.StringVar(&c.serverBin, "server-bin", "", "scenario 6: also run scenarios 1, 3, 4 and 5 on a throwaway server of this binary, such as a Valkey build's valkey-server")
	fs.IntVar(&c.rounds, "rounds", 20, "rounds; each runs every implementation once")
	fs.IntVar(&c.ops, "ops", 1000, "operations per implementation per round")
	fs.IntVar(&c.trials, "trials", 30, "scenario 4: trials; each runs every implementation once")
	fs.IntVar(&c.losses, "losses", 200, fmt.Sprintf("scenario 7: losses per implementation, timed in rounds of %d that take turns", lossesPerRound))
	fs.StringVar(&c.plots, "plots", "", "write the plots as PNG files into this directory")
	asJSON := fs.Bool("json", false, "print the report as one JSON document on stdout, and the markdown report on stderr")
	pin := fs.Bool("pin", false, "run each throwaway server on the last CPU and the bench on the others, so that every reply crosses CPUs, as from a server on another host, and the kernel moves neither between rounds (Linux, at least 2 CPUs)")
	fs.StringVar(&c.impls, "impls", "", "comma-separated ids of the implementations to run (default: all): baton-fast, baton-fair, rueidislock, redsync, redislock, notify-eval, notify-getdel, notify-ping-eval, floor")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the rounds to this file; samples carry the label impl=<implementation>, for pprof's -tagfocus")
	scenarios := fs.String("scenarios", "1,2,3,4,5,6,7", "comma-separated scenarios to run: 1 uncontended, 2 throughput, 3 hand-off, 4 the remote waiter, 5 server cost (of 3's rounds), 6 scenarios 1, 3, 4 and 5 again on a server with io-threads 4 and on --server-bin's, 7 a lost lease noticed (default without --addr: all; with it: all but 6)")
	fs.DurationVar(&c.throughput, "throughput-duration", time.Second, "scenario 2: time per implementation per round")
	fs.DurationVar(&c.handoff, "handoff-duration", 2*time.Second, "scenario 3: time per implementation per round")
	fs.DurationVar(&c.slowSteps, "slow-steps", 0, "scenario 3: write to stderr every hand-off, hold (its INCR) and unlock that took longer than this, with its locker and its time into the round (default 0: none)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if c.addr != "" && !given["scenarios"] {
		*scenarios = "1,2,3,4,5,7" // 6 starts servers of its own
	}
	c.scenarios = map[int]bool{}
	for f := range strings.SplitSeq(*scenarios, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > lastScenario {
			return c, fmt.Errorf("--scenarios %q: want numbers from 1 to %d", *scenarios, lastScenario)
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
	case c.slowSteps < 0:
		return c, fmt.Errorf("--slow-steps %s: want 0 or more", c.slowSteps)
	case c.trials < 1:
		return c, fmt.Errorf("--trials %d: want at least 1", c.trials)
	case c.losses < 1:
		return c, fmt.Errorf("--losses %d: want at least 1", c.losses)
	case c.scenarios[5] && !c.scenarios[3]:
		return c, errors.New("--scenarios: 5 counts the commands of 3's rounds; add 3")
	case c.scenarios[6] && c.addr != "":
		return c, errors.New("--scenarios: 6 starts servers of its own; leave out 6 or --addr")
	case c.serverBin != "" && !c.scenarios[6]:
		return c, errors.New("--server-bin is for scenario 6; add 6 to --scenarios")
	case *pin && c.addr != "":
		return c, errors.New("--pin pins the throwaway servers; leave out --pin or --addr")
	}
	if *asJSON {
		c.json = &jsonReport{Servers: []jsonServer{}}
	}
	if *pin {
		plan, err := planPinning()
		if err != nil {
			return c, err
		}
		c.pin = &plan
	}
	return c, nil
}

// run measures every implementation on every server the scenarios ask
// for and writes the report on stdout, progress on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	all, err := selectImpls(impls(), c.impls)
	if err != nil {
		return err
	}
	prefix, err := runPrefix()
	if err != nil {
		return err
	}
	if c.pin != nil {
		if err := c.pin.pinClient(); err != nil {
			return err
		}
	}
	stopProfile, err := startCPUProfile(c.cpuProfile)
	if err != nil {
		return err
	}
	defer func() {
		if perr := stopProfile(); err == nil {
			err = perr
		}
	}()
	markdown := stdout
	if c.json != nil {
		markdown = stderr
		c.json.Command, c.json.Date = commandLine(args), time.Now().UTC().Format(time.RFC3339)
		c.json.Machine = strings.TrimPrefix(machine(), "Machine: ")
	}
	out := &stickyWriter{w: markdown}
	fmt.Fprintf(out, "%s\n", aboutRun(args))
	for _, s := range c.servers() {
		if err := runOnServer(ctx, c, s, all, prefix, out, stderr); err != nil {
			return err
		}
	}
	if out.err != nil || c.json == nil {
		return out.err
	}
	return c.json.write(stdout)
}

// stickyWriter keeps the first error of its writes and drops every
// write after it, so that a report's many writes need one check, at the
// end (as bufio.Writer does).
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

// aboutRun is the lines the report starts with: the command, the date and
// the machine.
func aboutRun(args []string) string {
	return fmt.Sprintf("Command (in bench/): `%s`.\nDate: %s.\n%s.\n", commandLine(args), time.Now().UTC().Format("2006-01-02 15:04 MST"), machine())
}

// commandLine is the command that ran, as a shell in bench/ takes it.
func commandLine(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = a
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\*?;&|<>()") {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.TrimSpace("go run . " + strings.Join(quoted, " "))
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
