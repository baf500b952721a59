package main

import (
	"context"
	"fmt"
	"time"
)

func init() { register("bench", "lock or Modify throughput and latency", runBench) }

// benchConfig is one bench's command line.
type benchConfig struct {
	addr        string
	mode        string // "fast" or "fair"
	op          string // "lock" or "modify"
	concurrency int
	keys        int
	duration    time.Duration
	json        bool
}

// The bounds of the flags: wide enough for any run a person means, narrow
// enough that a typo does not start a million goroutines.
const (
	benchMaxConcurrency = 10_000
	benchMaxKeys        = 1_000_000
	benchMaxDuration    = 24 * time.Hour
)

const benchAbout = `Runs Lock+Unlock (--op lock) or a Modify that increments a counter
(--op modify) back to back in --concurrency goroutines on --keys keys for
--duration, and reports the throughput, the latency of one operation
(p50, p90, p99, p99.9, max, from an HDR histogram) and the Redis commands
per acquisition (INFO commandstats before and after, for the whole server;
the commands that scripts run count too, as Redis counts them). The n-th
operation of goroutine g takes key (g + n*concurrency) mod keys: with as
many keys as goroutines each has a key of its own, with fewer they share.

Keys live under a random prefix of this run and are deleted at the end;
each has a TTL besides. Without --addr, bench starts a throwaway server.`

func parseBenchFlags(args []string, out outputs) (benchConfig, error) {
	var c benchConfig
	fs := newFlags("bench", "[flags]", benchAbout, out)
	fs.StringVar(&c.addr, "addr", "", addrFlagHelp+" (default: a throwaway server)")
	fs.StringVar(&c.mode, "mode", "fast", "the lock's mode: fast or fair")
	fs.StringVar(&c.op, "op", "lock", "what one operation is: lock (Lock+Unlock) or modify (manager.Modify incrementing a counter)")
	fs.IntVar(&c.concurrency, "concurrency", 8, "goroutines running operations back to back")
	fs.IntVar(&c.keys, "keys", 0, "distinct keys (default: --concurrency)")
	fs.DurationVar(&c.duration, "duration", 5*time.Second, "how long to start operations for; those running at the end finish")
	fs.BoolVar(&c.json, "json", false, "print one JSON document on stdout instead of the table")
	rest, err := parse(fs, args)
	if err != nil {
		return c, err
	}
	if err := noArgs(rest); err != nil {
		return c, err
	}
	if c.keys == 0 {
		c.keys = c.concurrency
	}
	switch {
	case c.mode != "fast" && c.mode != "fair":
		return c, usagef("--mode %q: want fast or fair", c.mode)
	case c.op != "lock" && c.op != "modify":
		return c, usagef("--op %q: want lock or modify", c.op)
	case c.concurrency < 1 || c.concurrency > benchMaxConcurrency:
		return c, usagef("--concurrency %d: want 1 to %d", c.concurrency, benchMaxConcurrency)
	case c.keys < 1 || c.keys > benchMaxKeys:
		return c, usagef("--keys %d: want 1 to %d", c.keys, benchMaxKeys)
	case c.duration < time.Millisecond || c.duration > benchMaxDuration:
		return c, usagef("--duration %v: want 1ms to %v", c.duration, benchMaxDuration)
	}
	return c, nil
}

func runBench(ctx context.Context, args []string, out outputs) error {
	c, err := parseBenchFlags(args, out)
	if err != nil {
		return err
	}
	t, err := findTarget(ctx, c.addr, out.stderr)
	if err != nil {
		return fmt.Errorf("finding a server: %w", err)
	}
	defer t.Close()
	t.announce(out, c.json)
	if c.mode == "fast" && !t.notifications {
		return fmt.Errorf("%s: fast mode waits on keyspace notifications, which this server does not publish; use --mode fair, or --addr a redis-server", redactAddr(t.addr))
	}
	res, err := benchmark(ctx, t.addr, c, out.stderr)
	if err != nil {
		return fmt.Errorf("bench on %s: %w", redactAddr(t.addr), err)
	}
	res.ServerKind = t.kind
	if c.json {
		return writeBenchJSON(out.stdout, res)
	}
	return writeBenchTable(out.stdout, res)
}
